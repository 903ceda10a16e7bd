/**
 * The `process` spans of the inbox (kind CONSUMER, by the messaging conventions), once for
 * every transport: one per delivery, whose parent is the creation context the message
 * carries (its `traceparent`: the producer's `create` span) with a link to it, so one trace
 * runs from the request that added the event to the last consumer; and for a batch, one
 * `process` span with a link to each message's context, beside the per-message spans (each
 * linked to it). The transport says only which broker it is (`InboxProcessOptions.messaging`).
 */
import { context, trace, type Context, type Link, type Span } from '@opentelemetry/api';
import {
  carriedContext,
  failSpan,
  headerLookup,
  inSpan,
  startMessagingSpan,
  type MessagingSystem,
} from '../observability/tracing';
import type { Envelope } from '../transport/envelope';
import type { InboxOutcome } from './types';

/** The per-message spans of the batches in flight, by envelope, for their handlers' runs. */
const IN_BATCH = new WeakMap<Envelope, Context>();

/**
 * Runs a handler of `envelope` with its message's `process` span active when it belongs to a
 * batch being traced (a single delivery's span is active already), so that the events it
 * adds are children of that span. @internal
 */
export function inMessageContext<T>(envelope: Envelope, run: () => T): T {
  const active = IN_BATCH.get(envelope);
  return active === undefined ? run() : context.with(active, run);
}

/** What an envelope from plain JavaScript carries, read without trusting its shape. */
function carriedBy(envelope: Envelope): Context | undefined {
  const headers: unknown = envelope.headers;
  if (typeof headers !== 'object' || headers === null) return undefined;
  return carriedContext(headerLookup(headers as Readonly<Record<string, string>>));
}

function destinationOf(
  envelopes: readonly Envelope[],
  messaging: MessagingSystem | undefined,
): string | undefined {
  if (messaging?.destination !== undefined) return messaging.destination;
  const source: unknown = (envelopes[0]?.delivery as { source?: unknown } | undefined)?.source;
  return typeof source === 'string' ? source : undefined;
}

function startProcess(
  envelope: Envelope,
  consumer: string,
  messaging: MessagingSystem | undefined,
  carried: Context | undefined,
  batch?: Span,
): Span {
  const links: Link[] = [];
  const carriedSpan = carried === undefined ? undefined : trace.getSpanContext(carried);
  if (carriedSpan !== undefined) links.push({ context: carriedSpan });
  if (batch !== undefined) links.push({ context: batch.spanContext() });
  const span = startMessagingSpan('process', destinationOf([envelope], messaging), {
    ...(messaging === undefined ? {} : { system: messaging.system }),
    operationName: 'process',
    parent: carried ?? context.active(),
    links,
  });
  if (!span.isRecording()) return span;
  span.setAttribute('justonce.consumer', consumer);
  if (typeof envelope.id === 'string') span.setAttribute('messaging.message.id', envelope.id);
  if (messaging?.consumerGroup !== undefined) {
    span.setAttribute('messaging.consumer.group.name', messaging.consumerGroup);
  }
  const delivery = envelope.delivery as Envelope['delivery'] | undefined;
  if (typeof delivery?.partition === 'number') {
    span.setAttribute('messaging.destination.partition.id', String(delivery.partition));
  }
  if (typeof delivery?.offset === 'string') {
    span.setAttribute('messaging.kafka.offset', Number(delivery.offset));
  }
  return span;
}

/** What the outcome says, on the span: a duplicate is marked, not an error. */
function markOutcome(span: Span, outcome: InboxOutcome<unknown>): void {
  if (!span.isRecording()) return;
  span.setAttribute('justonce.inbox.outcome', outcome.status);
  if (outcome.messageId !== undefined) span.setAttribute('messaging.message.id', outcome.messageId);
  switch (outcome.status) {
    case 'duplicate':
      span.setAttribute('justonce.inbox.duplicate', true);
      return;
    case 'processed':
      span.setAttribute('justonce.inbox.attempt', outcome.attempt);
      return;
    case 'failed':
      span.setAttribute('justonce.inbox.attempt', outcome.attempt);
      failSpan(span, outcome.error);
      return;
    case 'dead-lettered':
      span.setAttribute('justonce.inbox.dead_letter.reason', outcome.reason);
      failSpan(span, outcome.error);
      return;
  }
}

/** Runs one delivery's `work` in its `process` span. @internal */
export function processTraced<R>(
  envelope: Envelope,
  consumer: string,
  messaging: MessagingSystem | undefined,
  work: () => Promise<InboxOutcome<R>>,
): Promise<InboxOutcome<R>> {
  const span = startProcess(envelope, consumer, messaging, carriedBy(envelope));
  return inSpan(span, work, markOutcome);
}

/**
 * Runs a batch's `work` in one `process` span linked to every message's context, and one
 * `process` span per message under its own context (active while its handler runs); each
 * message's span ends with its outcome. @internal
 */
export async function processBatchTraced<R>(
  envelopes: readonly Envelope[],
  consumer: string,
  messaging: MessagingSystem | undefined,
  work: () => Promise<InboxOutcome<R>[]>,
): Promise<InboxOutcome<R>[]> {
  const carried = envelopes.map(carriedBy);
  const links: Link[] = [];
  for (const c of carried) {
    const span = c === undefined ? undefined : trace.getSpanContext(c);
    if (span !== undefined) links.push({ context: span });
  }
  const batch = startMessagingSpan('process', destinationOf(envelopes, messaging), {
    ...(messaging === undefined ? {} : { system: messaging.system }),
    operationName: 'process',
    links,
  });
  if (batch.isRecording()) {
    batch.setAttribute('messaging.batch.message_count', envelopes.length);
    batch.setAttribute('justonce.consumer', consumer);
    if (messaging?.consumerGroup !== undefined) {
      batch.setAttribute('messaging.consumer.group.name', messaging.consumerGroup);
    }
  }
  const spans = envelopes.map((envelope, i) => {
    const span = startProcess(envelope, consumer, messaging, carried[i], batch);
    if (span.isRecording()) IN_BATCH.set(envelope, trace.setSpan(context.active(), span));
    return span;
  });
  try {
    const outcomes = await inSpan(batch, work);
    outcomes.forEach((outcome, i) => markOutcome(spans[i] as Span, outcome));
    return outcomes;
  } catch (error) {
    for (const span of spans) failSpan(span, error);
    throw error;
  } finally {
    for (const [i, span] of spans.entries()) {
      span.end();
      IN_BATCH.delete(envelopes[i] as Envelope);
    }
  }
}
