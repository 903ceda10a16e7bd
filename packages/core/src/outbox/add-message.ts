import { closestOption } from '../config/options';
import { shownType } from '../messages/errors/invalid-payload-error';
import { MESSAGE_TYPE_HEADER, type MessageType } from '../messages/message-type';
import { validatePayload } from '../messages/validate';
import { errorText } from '../common/errors';
import { storableDiagnostic, textOf } from '../common/text';
import { encodeEvents, isPlainObject, type EncodedEvent, type EventLimits } from './encode';
import { InvalidEventError } from './errors/invalid-event-error';
import type { AddMessageOptions, EventCause, MessageEventOptions } from './types';

const EVENT_KEYS: readonly (keyof MessageEventOptions)[] = [
  'destination',
  'key',
  'headers',
  'messageId',
];
const ADD_KEYS: readonly (keyof AddMessageOptions)[] = [...EVENT_KEYS, 'cause', 'startIndex'];

/** The options of a typed `add`, as plain JavaScript may pass them; unknown keys refused. */
function checkOptions(value: unknown, known: readonly string[]): Record<string, unknown> {
  if (value === undefined || value === null) return {};
  if (typeof value !== 'object' || Array.isArray(value)) {
    throw new InvalidEventError('options', 0, 'the options of add must be an object');
  }
  for (const key of Object.keys(value)) {
    if (known.includes(key)) continue;
    const suggestion = closestOption(key, known);
    const shown = JSON.stringify(storableDiagnostic(key.slice(0, 64)));
    throw new InvalidEventError(
      'options',
      0,
      `unknown option ${shown}${suggestion === undefined ? '' : `; did you mean \`${suggestion}\`?`}`,
    );
  }
  return value as Record<string, unknown>;
}

/** The message of whatever a `key` function threw, storable. */
function messageOf(error: unknown): string {
  const message = (error as { message?: unknown } | null | undefined)?.message;
  return errorText(typeof message === 'string' ? message : textOf(error));
}

/** The caller's headers and `type`; a `type` header that says otherwise is refused. */
function headersOf(given: unknown, type: string): unknown {
  if (given === undefined) return { [MESSAGE_TYPE_HEADER]: type };
  // Anything but a plain object goes to the event's own checks, which refuse it.
  if (!isPlainObject(given)) return given;
  const own = Object.getOwnPropertyDescriptor(given, MESSAGE_TYPE_HEADER);
  if (own !== undefined && own.value !== type) {
    throw new InvalidEventError(
      'headers',
      0,
      `header "${MESSAGE_TYPE_HEADER}" is set by the message type and must not say otherwise`,
    );
  }
  // No prototype, so that a header named `__proto__` stays a header.
  const headers: Record<string, unknown> = Object.create(null) as Record<string, unknown>;
  for (const [name, value] of Object.entries(given)) headers[name] = value;
  headers[MESSAGE_TYPE_HEADER] = type;
  return headers;
}

/**
 * Validates and encodes one typed message for `outbox.add`: its options, then its payload with
 * the message type's schema (awaited when the schema answers with a promise), then the event
 * as `add` checks every event. Throws {@link InvalidEventError} (field `payload`, with the
 * `InvalidPayloadError` as cause, for a payload the schema refuses) before any SQL. @internal
 */
export async function encodeMessage(
  message: MessageType,
  payload: unknown,
  options: unknown,
  limits: EventLimits,
): Promise<EncodedEvent> {
  const given = checkOptions(options, ADD_KEYS);
  const validation = await validatePayload(message, payload);
  if (!validation.ok) {
    throw new InvalidEventError('payload', 0, validation.error.message, validation.error);
  }
  const destination = given.destination ?? message.destination;
  if (destination === undefined) {
    throw new InvalidEventError(
      'destination',
      0,
      `message type ${shownType(message.type)} has no destination: give one to defineMessage or in the options of add`,
    );
  }
  let key = given.key;
  if (key === undefined) {
    try {
      key = message.key(payload);
    } catch (error) {
      throw new InvalidEventError(
        'key',
        0,
        `the key function of message type ${shownType(message.type)} threw: ${messageOf(error)}`,
        error,
      );
    }
  }
  const event = {
    destination,
    key,
    payload,
    headers: headersOf(given.headers, message.type),
    messageId: given.messageId,
  };
  const [encoded] = encodeEvents(
    [event],
    { cause: given.cause, startIndex: given.startIndex },
    limits,
    true,
  );
  if (encoded === undefined) throw new Error('a typed add encoded no event');
  return encoded;
}

/**
 * The options a handler's typed `add` passes on to `outbox.add`: the caller's, which may not
 * set `cause` or `startIndex`, with the handler's. @internal
 */
export function handlerMessageOptions(
  options: unknown,
  cause: EventCause,
  startIndex: number,
): AddMessageOptions {
  const given = checkOptions(options, EVENT_KEYS);
  return { ...(given as MessageEventOptions), cause, startIndex };
}
