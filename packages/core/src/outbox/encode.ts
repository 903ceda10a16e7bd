import { randomUUID } from 'node:crypto';
import {
  hasLoneSurrogate,
  storableDiagnostic,
  unstorableText,
  unwritableText,
} from '../common/text';
import { MESSAGE_ID_HEADER } from '../transport/message-headers';
import { InvalidEventError, type InvalidEventField } from './errors/invalid-event-error';
import { deriveMessageId } from './message-id';
import type { EventCause } from './types';

/** Limits `add` enforces on every event. */
export interface EventLimits {
  readonly maxKeyLength: number;
  readonly maxDestinationLength: number;
  readonly maxMessageIdLength: number;
  readonly maxPayloadBytes: number;
}

/** One validated event, ready to insert. @internal */
export interface EncodedEvent {
  readonly destination: string;
  readonly key: string | null;
  readonly messageId: string;
  /** The headers as JSON (a header named `__proto__` included). */
  readonly headersJson: string;
  readonly payload: Buffer;
}

/** Header carrying the payload type of JSON-serialized events. */
const JSON_CONTENT_TYPE = 'application/json';

/** A value for an error message: never the raw text, which may not be storable. */
function shown(value: string): string {
  return JSON.stringify(storableDiagnostic(value.length > 64 ? `${value.slice(0, 64)}…` : value));
}

/**
 * Refuses text PostgreSQL would not store exactly: U+0000 fails the statement (and aborts the
 * caller's transaction), a lone surrogate is silently replaced. A text column (`json` false)
 * must also read back exactly on its own; a value inside the JSON headers need only be
 * written unchanged.
 */
function requireStorable(
  value: string,
  field: InvalidEventField,
  index: number,
  what: string = field,
  json = false,
): void {
  const why = json ? unwritableText(value) : unstorableText(value);
  if (why !== undefined) throw new InvalidEventError(field, index, `${what} ${why}`);
}

/** The message of whatever a `toJSON` or getter threw, storable. */
function messageOf(error: unknown): string {
  const message = (error as { message?: unknown } | null | undefined)?.message;
  return typeof message === 'string' ? storableDiagnostic(message) : 'a non-Error value was thrown';
}

/** The payload's bytes: as given for bytes and strings unless `asJson`; JSON otherwise. */
function encodePayload(
  payload: unknown,
  index: number,
  asJson: boolean,
): { bytes: Buffer; json: boolean } {
  if (asJson) return { bytes: jsonBytes(payload, index), json: true };
  if (payload instanceof Uint8Array) {
    return {
      bytes: Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength),
      json: false,
    };
  }
  if (typeof payload === 'string') {
    // U+0000 is fine in bytes; a lone surrogate would be changed to U+FFFD by UTF-8.
    if (hasLoneSurrogate(payload)) {
      throw new InvalidEventError(
        'payload',
        index,
        'a string payload contains a lone UTF-16 surrogate, which UTF-8 cannot encode; pass bytes instead',
      );
    }
    return { bytes: Buffer.from(payload, 'utf8'), json: false };
  }
  return { bytes: jsonBytes(payload, index), json: true };
}

function jsonBytes(payload: unknown, index: number): Buffer {
  let text: string | undefined;
  try {
    // JSON escapes U+0000 and lone surrogates, so any string survives it exactly.
    text = JSON.stringify(payload);
  } catch (error) {
    throw new InvalidEventError(
      'payload',
      index,
      `payload cannot be serialized as JSON: ${messageOf(error)}`,
      error,
    );
  }
  if (text === undefined) {
    throw new InvalidEventError(
      'payload',
      index,
      `payload of type ${typeof payload} cannot be serialized as JSON`,
    );
  }
  return Buffer.from(text, 'utf8');
}

function requireText(
  value: unknown,
  field: 'destination' | 'messageId',
  index: number,
  max: number,
): string {
  if (typeof value !== 'string' || value.trim() === '') {
    throw new InvalidEventError(field, index, `${field} must be a non-empty string`);
  }
  if (value.length > max) {
    throw new InvalidEventError(
      field,
      index,
      `${field} is ${value.length} characters, over the limit of ${max}`,
    );
  }
  requireStorable(value, field, index);
  return value;
}

function encodeKey(value: unknown, index: number, max: number): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'string') {
    throw new InvalidEventError('key', index, 'key must be a string, null or omitted');
  }
  const bytes = Buffer.byteLength(value, 'utf8');
  if (bytes > max) {
    throw new InvalidEventError('key', index, `key is ${bytes} bytes, over the limit of ${max}`);
  }
  requireStorable(value, 'key', index);
  return value;
}

/** A plain object (of this or another realm), not a Map, array or class instance. @internal */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null) return false;
  const proto = Object.getPrototypeOf(value) as object | null;
  return proto === null || Object.getPrototypeOf(proto) === null;
}

function addHeaders(target: Record<string, string>, given: unknown, index: number): void {
  if (given === undefined) return;
  if (!isPlainObject(given)) {
    throw new InvalidEventError('headers', index, 'headers must be a plain object of strings');
  }
  for (const [name, value] of Object.entries(given)) {
    if (name === '' || typeof value !== 'string') {
      throw new InvalidEventError(
        'headers',
        index,
        `header ${shown(name)} must have a non-empty name and a string value`,
      );
    }
    requireStorable(name, 'headers', index, 'a header name', true);
    const why = unwritableText(value);
    if (why !== undefined) {
      throw new InvalidEventError('headers', index, `header ${shown(name)} ${why}`);
    }
    // Assigning `__proto__` would set the prototype (and drop a string): define it instead.
    if (name === '__proto__') {
      Object.defineProperty(target, name, {
        value,
        enumerable: true,
        writable: true,
        configurable: true,
      });
    } else target[name] = value;
  }
}

/** The cause, checked field by field: every one becomes a header or part of the ids. */
function checkCause(value: unknown): EventCause | undefined {
  if (value === undefined || value === null) return undefined;
  if (!isPlainObject(value)) {
    throw new InvalidEventError('cause', 0, 'cause must be an object');
  }
  for (const name of ['consumer', 'messageId'] as const) {
    const text = value[name];
    if (typeof text !== 'string' || text === '') {
      throw new InvalidEventError('cause', 0, `cause.${name} must be a non-empty string`);
    }
    requireStorable(text, 'cause', 0, `cause.${name}`, true);
  }
  for (const name of ['scope', 'correlationId', 'traceparent', 'tracestate'] as const) {
    const text = value[name];
    if (text === undefined) continue;
    if (typeof text !== 'string') {
      throw new InvalidEventError('cause', 0, `cause.${name} must be a string or omitted`);
    }
    requireStorable(text, 'cause', 0, `cause.${name}`, true);
  }
  return value as unknown as EventCause;
}

/** Options of one call, as plain JavaScript may pass them. */
function checkOptions(
  options: unknown,
  count: number,
): { cause: EventCause | undefined; startIndex: number } {
  if (options === undefined || options === null) return { cause: undefined, startIndex: 0 };
  if (typeof options !== 'object') {
    throw new InvalidEventError('options', 0, 'the options of add must be an object');
  }
  const given = options as { cause?: unknown; startIndex?: unknown };
  const cause = checkCause(given.cause);
  const startIndex = given.startIndex ?? 0;
  // Every derived index must be exact, or two events would get the same id.
  if (
    typeof startIndex !== 'number' ||
    !Number.isSafeInteger(startIndex) ||
    startIndex < 0 ||
    !Number.isSafeInteger(startIndex + Math.max(0, count - 1))
  ) {
    throw new InvalidEventError(
      'startIndex',
      0,
      `startIndex must be a non-negative safe integer (also after adding the event count), got ${typeof startIndex === 'number' ? String(startIndex) : typeof startIndex}`,
    );
  }
  return { cause, startIndex };
}

function encodeEvent(
  event: unknown,
  index: number,
  cause: EventCause | undefined,
  derivedIndex: number,
  limits: EventLimits,
  asJson: boolean,
): EncodedEvent {
  if (typeof event !== 'object' || event === null || Array.isArray(event)) {
    throw new InvalidEventError('event', index, 'an event must be an object');
  }
  const e = event as Record<string, unknown>;
  const destination = requireText(e.destination, 'destination', index, limits.maxDestinationLength);
  const key = encodeKey(e.key, index, limits.maxKeyLength);
  const messageId =
    e.messageId !== undefined
      ? requireText(e.messageId, 'messageId', index, limits.maxMessageIdLength)
      : cause
        ? deriveMessageId(cause.consumer, cause.messageId, derivedIndex, cause.scope ?? '')
        : randomUUID();

  const { bytes, json } = encodePayload(e.payload, index, asJson);
  if (bytes.byteLength > limits.maxPayloadBytes) {
    throw new InvalidEventError(
      'payload',
      index,
      `payload is ${bytes.byteLength} bytes, over the limit of ${limits.maxPayloadBytes}`,
    );
  }

  const headers: Record<string, string> = {};
  if (json) headers['content-type'] = JSON_CONTENT_TYPE;
  if (cause) {
    headers['causation-id'] = cause.messageId;
    headers['correlation-id'] = cause.correlationId ?? cause.messageId;
    if (cause.traceparent !== undefined) headers.traceparent = cause.traceparent;
    if (cause.tracestate !== undefined) headers.tracestate = cause.tracestate;
    if (cause.scope !== undefined && cause.scope !== '') headers.tenant = cause.scope;
  }
  addHeaders(headers, e.headers, index);
  headers[MESSAGE_ID_HEADER] = messageId;
  return { destination, key, messageId, headersJson: JSON.stringify(headers), payload: bytes };
}

/**
 * Validates and encodes the events of one `add` call, as plain JavaScript may pass them.
 * Throws {@link InvalidEventError} for the first bad event (or bad options), and for a
 * message id given twice in the call, before anything is written. `asJson` serializes every
 * payload as JSON, strings and bytes included (typed messages).
 */
export function encodeEvents(
  events: readonly unknown[],
  options: unknown,
  limits: EventLimits,
  asJson = false,
): EncodedEvent[] {
  const { cause, startIndex } = checkOptions(options, events.length);
  const encoded: EncodedEvent[] = [];
  const firstIndex = new Map<string, number>();
  // An index loop, not map(): a hole in a sparse array is an event too (a bad one).
  for (let index = 0; index < events.length; index += 1) {
    const event = encodeEvent(events[index], index, cause, startIndex + index, limits, asJson);
    const earlier = firstIndex.get(event.messageId);
    if (earlier !== undefined) {
      // The insert would silently keep one of them; refuse before any SQL instead.
      throw new InvalidEventError(
        'messageId',
        index,
        `message id ${shown(event.messageId)} is also the id of event #${earlier}: ids must be unique within one call`,
      );
    }
    firstIndex.set(event.messageId, index);
    encoded.push(event);
  }
  return encoded;
}
