import type { Knex } from 'knex';
import type { MessagePayload, MessageType } from '../messages/message-type';

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

/**
 * Options of the typed form of {@link HandlerOutbox.add}: {@link AddMessageOptions} without
 * `cause` and `startIndex`, which the handler's context sets.
 */
export interface MessageEventOptions {
  /** Topic, queue or exchange; overrides the message type's `destination`. One is required. */
  readonly destination?: string;
  /**
   * Partition key; overrides the message type's `key(payload)`. `null` publishes without a
   * key even when the message type has a `key` function.
   */
  readonly key?: string | null;
  /** Extra headers. A `type` header, if given, must equal the message type's `type`. */
  readonly headers?: Readonly<Record<string, string>>;
  /** The id downstream consumers dedupe on; generated (or derived from `cause`) when omitted. */
  readonly messageId?: string;
}

/** Options of the typed form of {@link Outbox.add}. */
export interface AddMessageOptions extends MessageEventOptions, AddOptions {}

/** Adds events inside a business transaction. */
export interface Outbox<Tx = Knex.Transaction> {
  /**
   * Adds events in `trx`, an open transaction of the outbox's `transactions` adapter (a knex
   * transaction by default); anything else is an `InvalidTransactionError` before any
   * SQL, so nothing can bypass the transaction by accident. Resolves to the events' message
   * ids.
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
    trx: Tx,
    events: OutboxEvent | readonly OutboxEvent[],
    options?: AddOptions,
  ): Promise<string[]>;
  /**
   * Adds one typed message (see `defineMessage`) in `trx` and resolves to its message id.
   * `payload` is validated with the message type's schema first (a schema may answer
   * asynchronously): a payload it refuses is an {@link InvalidEventError} with field
   * `payload`, the issues in its message and an `InvalidPayloadError` as `cause`, and
   * nothing is written. The payload as given (the schema's input, not its output) is written
   * as JSON, with the header `type` set to the message type's `type` and `content-type`
   * `application/json`; destination and key come from `options`, else from the message type.
   * Otherwise as the event form: same limits, errors and all-or-nothing write.
   */
  add<M extends MessageType>(
    trx: Tx,
    message: M,
    payload: MessagePayload<M>,
    options?: AddMessageOptions,
  ): Promise<string>;
}

/** The outbox as a handler sees it: bound to the handler's transaction and incoming message. */
export interface HandlerOutbox {
  /** Adds events to the handler's transaction with deterministic ids. */
  add(events: OutboxEvent | readonly OutboxEvent[]): Promise<string[]>;
  /**
   * Adds one typed message to the handler's transaction, validated as by {@link Outbox.add},
   * with a deterministic id; resolves to the id. Every call, of either form, continues the
   * index the ids are derived from.
   */
  add<M extends MessageType>(
    message: M,
    payload: MessagePayload<M>,
    options?: MessageEventOptions,
  ): Promise<string>;
}
