import { MESSAGE_ID_HEADER } from '@justonce/core/transport';
import { utf8Text } from './text';

/** Header names justonce reads and writes on Kafka records. */
export const HEADERS = {
  /** The id downstream inboxes dedupe on. */
  messageId: MESSAGE_ID_HEADER,
  /** Id of the message whose handling produced this one. */
  causationId: 'causation-id',
  /** Id shared by every message of one business flow. */
  correlationId: 'correlation-id',
  /** W3C trace context. */
  traceparent: 'traceparent',
  /** W3C trace state. */
  tracestate: 'tracestate',
  /** Tenant or isolation scope; becomes the envelope's `scope`. */
  tenant: 'tenant',
} as const;

/** Header values as kafkajs delivers them (`null` from clients that mark an absent value so). */
export type RawHeaderValue =
  Buffer | string | ReadonlyArray<Buffer | string | null | undefined> | null | undefined;

/** Record headers as kafkajs delivers them. */
export type RawHeaders = Readonly<Record<string, RawHeaderValue>>;

/**
 * Decodes record headers to strings. A header that occurs more than once keeps its last
 * value, which is the one Kafka clients conventionally treat as current; an absent value
 * (`undefined`, `null`, an empty list) is dropped. Bytes are decoded by {@link utf8Text}:
 * invalid UTF-8 is kept, one-to-one, as lone surrogates that the inbox refuses, so such a
 * header dead-letters the record rather than being read as something it is not. A value
 * of any other type (from a client that is not kafkajs) is passed on as it is, and the inbox
 * dead-letters it as `INVALID_HEADERS`. Every name, `__proto__` included, becomes an own
 * property. Never throws.
 */
export function decodeHeaders(raw: RawHeaders | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  if (typeof raw !== 'object' || raw === null) return out;
  for (const [name, value] of Object.entries(raw)) {
    const last: unknown = Array.isArray(value) ? value[value.length - 1] : value;
    if (last === undefined || last === null) continue;
    const text: unknown =
      typeof last === 'string' ? last : last instanceof Uint8Array ? utf8Text(last) : last;
    Object.defineProperty(out, name, {
      value: text,
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return out;
}

/**
 * `headers[name]` when the record carries that header, so that a name such as
 * `constructor` never finds what `Object.prototype` holds. @internal
 */
export function headerOf(
  headers: Readonly<Record<string, string>>,
  name: string,
): string | undefined {
  return Object.hasOwn(headers, name) ? headers[name] : undefined;
}
