import { createHash } from 'node:crypto';

/**
 * A deterministic message id for the `index`-th event emitted while `consumer` handles
 * `incomingId` in `scope`: a name-based UUID (version 5 layout over SHA-256), so a retried
 * handler emits exactly the same ids and downstream inboxes drop the repeats.
 */
export function deriveMessageId(
  consumer: string,
  incomingId: string,
  index: number,
  scope = '',
): string {
  const hash = createHash('sha256')
    .update(JSON.stringify(['justonce', scope, consumer, incomingId, index]))
    .digest();
  const bytes = Buffer.from(hash.subarray(0, 16));
  bytes[6] = (bytes[6]! & 0x0f) | 0x50;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
