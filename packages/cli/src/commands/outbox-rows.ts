import type { OutboxEntry } from '@justonce/core/admin';
import { bodyLabel, renderBody, time } from '../format';

/** An event as `--json` prints it: the payload as text when it is UTF-8, else base64. */
export function eventJson(e: OutboxEntry): Record<string, unknown> {
  let text: string | undefined;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(e.payload);
  } catch {
    text = undefined;
  }
  return {
    ...e,
    payload: text ?? Buffer.from(e.payload).toString('base64'),
    payloadEncoding: text === undefined ? 'base64' : 'text',
  };
}

/** The columns of an event in tables. */
export const EVENT_HEAD = [
  'id',
  'destination',
  'status',
  'message id',
  'attempts',
  'created at',
  'last error',
];
export const eventRow = (e: OutboxEntry): (string | number)[] => [
  e.id,
  e.destination,
  e.status,
  e.messageId,
  e.attempts,
  e.createdAt.toISOString(),
  (e.lastError ?? '').slice(0, 50),
];

/** `outbox show`'s text. */
export function showEvent(e: OutboxEntry): string {
  return [
    `outbox event ${e.id}`,
    `  destination:   ${e.destination}`,
    `  status:        ${e.status}`,
    `  message id:    ${e.messageId}`,
    `  key:           ${e.key ?? '(none)'}`,
    `  attempts:      ${e.attempts}`,
    `  created at:    ${time(e.createdAt)}`,
    `  available at:  ${time(e.availableAt)}`,
    `  published at:  ${time(e.publishedAt)}`,
    '',
    'headers',
    ...Object.entries(e.headers).map(([k, v]) => `  ${k}: ${v}`),
    ...(Object.keys(e.headers).length === 0 ? ['  (none)'] : []),
    '',
    `payload (${bodyLabel(e.payload)})`,
    renderBody(e.payload),
    '',
    'last error',
    `  ${e.lastError ?? '-'}`,
  ].join('\n');
}
