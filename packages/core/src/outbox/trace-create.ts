/**
 * The `create` span of each event `outbox.add` records (kind PRODUCER, by the messaging
 * conventions): a child of the caller's active span (the HTTP operation, a handler's
 * `process` span), and the context the event carries: its stored `traceparent` is this
 * span's, so the relay's `send` and every consumer's `process` continue the caller's trace.
 */
import type { Span } from '@opentelemetry/api';
import { failSpan, injectSpan, startMessagingSpan } from '../observability/tracing';
import type { EncodedEvent } from './encode';

/** The trace headers a propagator writes, replaced as a pair: never one stale beside a new one. */
const TRACE_HEADERS = ['traceparent', 'tracestate'] as const;

/** The event with the span's context in its headers; the event itself when not recording. */
function carrying(event: EncodedEvent, span: Span): EncodedEvent {
  if (!span.isRecording()) return event;
  span.setAttributes({
    'messaging.message.id': event.messageId,
    'messaging.message.body.size': event.payload.byteLength,
  });
  const carrier: Record<string, string> = {};
  injectSpan(span, carrier);
  if (Object.keys(carrier).length === 0) return event;
  // Parsed and written again only when recording: JSON keeps a `__proto__` header an own key.
  const headers = JSON.parse(event.headersJson) as Record<string, string>;
  for (const name of TRACE_HEADERS) delete headers[name];
  return { ...event, headersJson: JSON.stringify(Object.assign(headers, carrier)) };
}

/**
 * Inserts `events` through `insert` inside one `create <destination>` span per event, each
 * event's headers carrying its span's context. A failed insert fails every span. @internal
 */
export async function insertCreated(
  events: readonly EncodedEvent[],
  insert: (events: readonly EncodedEvent[]) => Promise<void>,
): Promise<void> {
  const spans = events.map((e) =>
    startMessagingSpan('create', e.destination, { operationName: 'add' }),
  );
  try {
    await insert(events.map((event, i) => carrying(event, spans[i] as Span)));
  } catch (error) {
    for (const span of spans) failSpan(span, error);
    throw error;
  } finally {
    for (const span of spans) span.end();
  }
}
