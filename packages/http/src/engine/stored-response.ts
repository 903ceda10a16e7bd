import { StoredResponseError } from '../errors/stored-response-error';
import type { HeaderPair, HeldResponse } from './response';

/**
 * The response as it is stored in the operation record, as JSON (the record's `response`).
 * Internal: the tables are not an API. `body` is the exact bytes, as UTF-8 text when they
 * are UTF-8 (smaller, and readable when debugging) and base64 otherwise, so a replay sends
 * the same bytes whatever they are.
 */
export interface StoredResponse {
  /** Format version of this shape. */
  readonly v: 1;
  readonly status: number;
  /** Content-Type and the route's `replayHeaders`, in the handler's order. */
  readonly headers: readonly HeaderPair[];
  readonly encoding: 'utf8' | 'base64';
  readonly body: string;
}

const strictUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** The part of `response` to store: its status, the `kept` headers, its body bytes. */
export function toStoredResponse(
  response: HeldResponse,
  kept: ReadonlySet<string>,
): StoredResponse {
  const headers = response.headers.filter(([name]) => kept.has(name));
  const text = utf8Text(response.body);
  return text === undefined
    ? { v: 1, status: response.status, headers, encoding: 'base64', body: toBase64(response.body) }
    : { v: 1, status: response.status, headers, encoding: 'utf8', body: text };
}

/**
 * The response to replay from what the record holds; a value of another shape (a record
 * written under the same operation name by something else) is a {@link StoredResponseError}.
 */
export function fromStoredResponse(value: unknown): HeldResponse {
  if (!isStoredResponse(value)) throw new StoredResponseError();
  const body =
    value.encoding === 'utf8' ? Buffer.from(value.body, 'utf8') : Buffer.from(value.body, 'base64');
  return { status: value.status, headers: value.headers, body };
}

/**
 * The bytes as text when they are UTF-8 that decodes and encodes back to themselves; not
 * when they hold U+0000, which the record's `json` column cannot return exactly.
 */
function utf8Text(bytes: Uint8Array): string | undefined {
  let text: string;
  try {
    text = strictUtf8.decode(bytes);
  } catch {
    return undefined;
  }
  return text.includes('\u0000') ? undefined : text;
}

function toBase64(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');
}

function isStoredResponse(value: unknown): value is StoredResponse {
  if (typeof value !== 'object' || value === null) return false;
  const record = value as Record<string, unknown>;
  return (
    record.v === 1 &&
    Number.isInteger(record.status) &&
    (record.encoding === 'utf8' || record.encoding === 'base64') &&
    typeof record.body === 'string' &&
    Array.isArray(record.headers) &&
    record.headers.every(
      (pair: unknown) =>
        Array.isArray(pair) &&
        pair.length === 2 &&
        typeof pair[0] === 'string' &&
        typeof pair[1] === 'string',
    )
  );
}
