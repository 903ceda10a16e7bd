import { randomUUID } from 'node:crypto';
import { MESSAGE_ID_HEADER } from '../transport/message-headers';
import { InvalidEventError } from './invalid-event-error';
import { deriveMessageId } from './message-id';
import type { AddOptions, OutboxEvent } from './types';

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
  readonly headers: Record<string, string>;
  readonly payload: Buffer;
}

/** Header carrying the payload type of JSON-serialized events. */
const JSON_CONTENT_TYPE = 'application/json';

function encodePayload(payload: unknown, index: number): { bytes: Buffer; json: boolean } {
  if (payload instanceof Uint8Array) {
    return {
      bytes: Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength),
      json: false,
    };
  }
  if (typeof payload === 'string') return { bytes: Buffer.from(payload, 'utf8'), json: false };
  let text: string | undefined;
  try {
    text = JSON.stringify(payload);
  } catch (error) {
    throw new InvalidEventError(
      'payload',
      index,
      `payload cannot be serialized as JSON: ${(error as Error).message}`,
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
  return { bytes: Buffer.from(text, 'utf8'), json: true };
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
  return value;
}

/**
 * Validates and encodes the events of one `add` call. Throws {@link InvalidEventError} for the
 * first bad event, before anything is written.
 */
export function encodeEvents(
  events: readonly OutboxEvent[],
  options: AddOptions,
  limits: EventLimits,
): EncodedEvent[] {
  const cause = options.cause;
  const startIndex = options.startIndex ?? 0;
  if (!Number.isInteger(startIndex) || startIndex < 0) {
    throw new InvalidEventError(
      'event',
      0,
      `startIndex must be a non-negative integer, got ${String(startIndex)}`,
    );
  }
  return events.map((event, index) => {
    if (typeof event !== 'object' || event === null) {
      throw new InvalidEventError('event', index, 'an event must be an object');
    }
    const destination = requireText(
      event.destination,
      'destination',
      index,
      limits.maxDestinationLength,
    );
    let key: string | null = null;
    if (event.key !== undefined && event.key !== null) {
      if (typeof event.key !== 'string') {
        throw new InvalidEventError('key', index, 'key must be a string, null or omitted');
      }
      if (Buffer.byteLength(event.key, 'utf8') > limits.maxKeyLength) {
        throw new InvalidEventError(
          'key',
          index,
          `key is ${Buffer.byteLength(event.key, 'utf8')} bytes, over the limit of ${limits.maxKeyLength}`,
        );
      }
      key = event.key;
    }
    const messageId =
      event.messageId !== undefined
        ? requireText(event.messageId, 'messageId', index, limits.maxMessageIdLength)
        : cause
          ? deriveMessageId(cause.consumer, cause.messageId, startIndex + index, cause.scope ?? '')
          : randomUUID();

    const { bytes, json } = encodePayload(event.payload, index);
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
    if (event.headers !== undefined) {
      if (
        typeof event.headers !== 'object' ||
        event.headers === null ||
        Array.isArray(event.headers)
      ) {
        throw new InvalidEventError('headers', index, 'headers must be an object of strings');
      }
      for (const [name, value] of Object.entries(event.headers)) {
        if (name === '' || typeof value !== 'string') {
          throw new InvalidEventError(
            'headers',
            index,
            `header "${name}" must have a non-empty name and a string value`,
          );
        }
        headers[name] = value;
      }
    }
    headers[MESSAGE_ID_HEADER] = messageId;
    return { destination, key, messageId, headers, payload: bytes };
  });
}
