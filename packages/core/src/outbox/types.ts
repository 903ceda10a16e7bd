import type { Knex } from 'knex';

/** One event to publish if and only if the caller's transaction commits. */
export interface OutboxEvent {
  /** Topic, queue or exchange the relay publishes to. Required. */
  readonly destination: string;
  /** Partition key: events of one key are published in the order they were added. */
  readonly key?: string | null;
  /**
   * The body: bytes (`Uint8Array`/`Buffer`) and strings are stored as given; anything else
   * is serialized as JSON at `add` time (a value that cannot be serialized is a typed error).
   */
  readonly payload: unknown;
  /** Extra headers to carry. */
  readonly headers?: Readonly<Record<string, string>>;
  /** The id downstream consumers dedupe on; generated when omitted. */
  readonly messageId?: string;
}

/** The incoming message an event is emitted while handling; sets causation and ids. */
export interface EventCause {
  /** The consumer handling the incoming message. */
  readonly consumer: string;
  /** The incoming message's id; becomes the event's `causation-id`. */
  readonly messageId: string;
  /** Tenant or scope; carried as the `tenant` header. */
  readonly scope?: string;
  /** Propagated as `correlation-id` (defaults to the incoming message id). */
  readonly correlationId?: string;
  /** W3C trace context to propagate. */
  readonly traceparent?: string;
  readonly tracestate?: string;
}

/** Options of {@link Outbox.add}. */
export interface AddOptions {
  /**
   * When set, message ids are derived deterministically from consumer + incoming id +
   * index (so a retried handler emits the same ids), and causation headers are added.
   */
  readonly cause?: EventCause;
  /** Index of the first event for id derivation. Default 0. */
  readonly startIndex?: number;
}

/** Adds events inside a business transaction. */
export interface Outbox {
  /**
   * Adds events in `trx`, which must be a knex transaction (anything else is a typed error:
   * nothing can bypass the transaction by accident). Resolves to the events' message ids.
   *
   * One call is all-or-nothing: it writes every event or none. Every event is validated
   * before any SQL runs ({@link InvalidEventError}: a bad field, text PostgreSQL cannot store
   * exactly, an id given twice in the call). An id already in the table is
   * {@link DuplicateMessageIdError}, thrown after the rows this call did insert were removed
   * again. After either error `trx` is still usable and holds nothing of the call. Calls of
   * over 1000 events (or 32 MiB) run their statements in a savepoint, so that a failure in a
   * later one undoes the earlier ones.
   */
  add(
    trx: Knex.Transaction,
    events: OutboxEvent | readonly OutboxEvent[],
    options?: AddOptions,
  ): Promise<string[]>;
}

/** The outbox as a handler sees it: bound to the handler's transaction and incoming message. */
export interface HandlerOutbox {
  /** Adds events to the handler's transaction with deterministic ids. */
  add(events: OutboxEvent | readonly OutboxEvent[]): Promise<string[]>;
}
