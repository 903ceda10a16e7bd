import type { OutgoingMessage } from './publisher';

/** The header every published message carries its id in; downstream inboxes read it. */
export const MESSAGE_ID_HEADER = 'message-id';

/**
 * A copy of `message.headers` with `message-id` set to the message's id: the headers a
 * transport publishes. The copy is the caller's to add its own headers to. Copied key by
 * key, because a spread with a computed key takes V8's slow path, which a relay publishing
 * tens of thousands of events a second notices (`pnpm bench kafka`, case `relay`).
 */
export function messageHeaders(message: OutgoingMessage): Record<string, string> {
  const headers: Record<string, string> = {};
  const given: Readonly<Record<string, string>> = message.headers ?? {};
  for (const name of Object.keys(given)) headers[name] = given[name] as string;
  headers[MESSAGE_ID_HEADER] = message.messageId;
  return headers;
}
