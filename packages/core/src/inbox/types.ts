import type { Knex } from 'knex';
import type { TransactionAdapter } from '../transactions/types';
import type { Meter } from '@opentelemetry/api';
import type { DeliveryPosition, Envelope } from '../transport/envelope';
import type { Logger } from '../observability/logger';
import type { MessagingSystem } from '../observability/tracing';
import type { Store } from '../store/store';
import type { HandlerOutbox, Outbox } from '../outbox/types';
import type { BackoffOptions } from '../retry/backoff';
import type { ErrorClass } from '../retry/error-class';
import type { Once } from '../operations/once/types';
import type { Operations } from '../operations/types';

/** What an inbox's `classify` option may answer: a retry class, or `'infrastructure'`. */
export type InboxErrorClass = ErrorClass | 'infrastructure';

/**
 * Your rule for errors the inbox meets: `'infrastructure'` says the failure is not the
 * message's (a dependency is down), so no attempt is charged and nothing is dead-lettered;
 * a retry class decides as for any handler error; `undefined` leaves it to the built-in rules.
 */
export type InboxErrorClassifier = (error: unknown) => InboxErrorClass | undefined;

/** What a handler receives: capabilities, not just data. */
export interface HandlerContext<Tx = Knex.Transaction> {
  /**
   * The business transaction, as the inbox's `transactions` adapter opened it (a knex
   * transaction by default); the dedup record is written in it.
   */
  readonly trx: Tx;
  /** The message being handled. */
  readonly message: Envelope;
  /** The validated message id. */
  readonly messageId: string;
  /** The scope (tenant) the message belongs to. */
  readonly scope: string;
  /** 1-based attempt number, counted durably outside the business transaction. */
  readonly attempt: number;
  /** Aborted when the consumer is shutting down or the delivery went stale. */
  readonly signal: AbortSignal;
  /** Adds events to this transaction with ids derived from this message. */
  readonly outbox: HandlerOutbox;
  /** The body as decoded by the inbox's `decode` option (the raw body when none is set). */
  readonly payload: unknown;
  /**
   * Runs a non-transactional side effect once for this message and step, recorded outside
   * the business transaction (in the inbox's `ledger`), so a redelivery replays the result
   * instead of calling `fn` again; `fn` gets a stable idempotency key for the remote API.
   * See docs/side-effects.md.
   */
  readonly once: Once;
}

/** Named points inside the inbox's processing, for fault injection in tests. */
export type InboxStep =
  /** The envelope was validated; nothing written yet. */
  | 'received'
  /** The attempt was counted durably, before the business transaction opened. */
  | 'attempt-counted'
  /** The handler returned; the transaction is not committed yet. */
  | 'handler-done'
  /** The transaction committed; the transport has not acknowledged yet. */
  | 'committed';

/** A message handler. Its effects commit if and only if the dedup record commits. */
export type Handler<R = unknown, Tx = Knex.Transaction> = (ctx: HandlerContext<Tx>) => Promise<R>;

/**
 * The outcome of handling one delivery, and what the transport must do:
 * - `processed`, `duplicate`: acknowledge.
 * - `failed`: do not acknowledge; redeliver after `retryDelayMs` (broker-native delay).
 * - `dead-lettered`: the store holds the dead letter; forward to the transport's own
 *   dead-letter destination if it has one, then acknowledge.
 */
export type InboxOutcome<R = unknown> =
  | {
      readonly status: 'processed';
      readonly messageId: string;
      readonly scope: string;
      readonly attempt: number;
      readonly result: R;
    }
  | { readonly status: 'duplicate'; readonly messageId: string; readonly scope: string }
  | {
      readonly status: 'failed';
      readonly messageId: string;
      readonly scope: string;
      readonly attempt: number;
      readonly retriable: boolean;
      readonly error: Error;
      /** How long the transport should wait before the next delivery. */
      readonly retryDelayMs: number;
    }
  | {
      readonly status: 'dead-lettered';
      readonly messageId: string | undefined;
      readonly scope: string;
      readonly attempt: number;
      /** Short machine-readable reason, e.g. `MAX_ATTEMPTS`, `MISSING_MESSAGE_ID`, `PAYLOAD_CONFLICT`. */
      readonly reason: string;
      readonly error: Error;
      /** Id of the dead letter in the store. */
      readonly deadLetterId: string;
      /**
       * Where this delivery sat in its broker (the envelope's `delivery.position`), when the
       * transport said: the dead-letter facts carry it.
       */
      readonly position?: DeliveryPosition;
    };

/** Options of {@link createInbox}. */
export interface InboxOptions<Tx = Knex.Transaction> {
  /** Where dedup records, attempts and dead letters live. */
  readonly store: Store;
  /** Consumer name; dedup is per consumer. Required, 1–200 characters. */
  readonly consumer: string;
  /** Scope for envelopes that carry none. Default `default`. */
  readonly defaultScope?: string;
  /** Attempts before a message is dead-lettered. Default 5. */
  readonly maxAttempts?: number;
  /** Longest message id accepted. Default 255. */
  readonly maxIdLength?: number;
  /** Headers included in the payload fingerprint besides the body. Default none. */
  readonly fingerprintHeaders?: readonly string[];
  /**
   * How the business transaction is opened, and so what `ctx.trx` is: a Drizzle, Kysely,
   * TypeORM or node-postgres transaction through that library's adapter (see
   * docs/transactions.md). Default: a knex transaction on the store.
   */
  readonly transactions?: TransactionAdapter<Tx>;
  /** Outbox used for `ctx.outbox`, on the same adapter. Default: one on the same store. */
  readonly outbox?: Outbox<Tx>;
  /**
   * Where `ctx.once` records its steps: operations (`createOperations`) whose store, lease,
   * wait, `maxResponseBytes`, `isRetriable`, logger and meter it uses (not their
   * `transactions`: steps are never written in a business transaction). Default: operations on
   * this inbox's store with their defaults. On PGlite the default has no usable connection
   * (the handler's transaction holds the only one), so there `ctx.once` needs a ledger on a
   * second store. See docs/side-effects.md.
   */
  readonly ledger?: Operations<unknown>;
  /**
   * Turns the raw body into the handler's `ctx.payload`. A throw here is bad input: the
   * message is dead-lettered with reason `UNDECODABLE_BODY`. Default: no decoding.
   */
  readonly decode?: (body: Uint8Array | string, envelope: Envelope) => unknown;
  /**
   * How long dedup records are kept, in milliseconds. Default 7 days. Must be at least
   * `redeliveryHorizonMs`, or construction fails.
   */
  readonly retentionMs?: number;
  /** How long the transport may redeliver a message; set by transports that know it. */
  readonly redeliveryHorizonMs?: number;
  /** Called at each {@link InboxStep}; for fault injection in tests (throw or kill there). */
  readonly onStep?: (step: InboxStep, messageId: string) => void | Promise<void>;
  /** Where log lines go. Default: a silent logger. */
  readonly logger?: Logger;
  /** OpenTelemetry meter for the inbox's metrics. Default: the global provider's. */
  readonly meter?: Meter;
  /** Include bodies in log lines. Default false: payloads never reach logs. */
  readonly logPayloads?: boolean;
  /**
   * Count attempts durably on every delivery. Default `false`: a delivery the transport
   * marks as a first delivery (`receiveCount === 1`, or `redelivered === false` without a
   * receive count) skips the counting write, because the broker's own count catches a
   * message that crashes the process on its first delivery (see docs/inbox.md). Set it
   * when a transport's first-delivery facts cannot be trusted.
   */
  readonly alwaysCountAttempts?: boolean;
  /**
   * Backoff for `retryDelayMs` of a failed outcome. Default base 100 ms, cap 20 s; after a
   * throttling error the base is at least 500 ms.
   */
  readonly backoff?: BackoffOptions;
  /**
   * Your own rule for handler errors, run before the built-in ones (see `classifyError`):
   * return `'non-retriable'` to dead-letter at once, `'transient'` or `'throttling'` to
   * retry, `'infrastructure'` when a dependency (not the message) failed, so the delivery is
   * not charged an attempt and `process` throws `StoreUnavailableError` as for an
   * outage of the store; `undefined` to let the built-in rules decide. Default: built-in
   * rules only.
   */
  readonly classify?: InboxErrorClassifier;
  /**
   * How often, at most, the inbox adds its per-minute counts (handled, duplicates,
   * dead-lettered) to the store's `consumer_activity` table, in milliseconds, for the
   * operator's status. One upsert per flush, outside any handler's transaction; counts not
   * yet flushed are lost if the process crashes (call {@link Inbox.flushActivity} on a
   * graceful shutdown). `0` records nothing. Default 10 000; at most 3 600 000.
   */
  readonly activityFlushMs?: number;
  /**
   * How redeliveries are recognised (see docs/inbox.md, "Dedup modes"). Default `'ids'`.
   * - `'ids'`: a dedup record per message id, written with the handler's effects.
   * - `'watermark'`: no row per message: per broker partition, the highest offset whose
   *   effects committed, advanced once per batch and partition in the same transaction; a
   *   record at or below it is a duplicate. For an ordered log (a Kafka partition) whose
   *   producer never sends one message twice at different offsets (an idempotent producer,
   *   such as justonce's relay). Every delivery must carry `delivery.position` with `topic`,
   *   `partition` and `offset`, or `process` throws a {@link ConfigurationError}.
   * - `'watermark+ids'`: both; the id records, which then only catch a producer's copies at
   *   other offsets, expire after `idRetentionMs`.
   */
  readonly dedup?: InboxDedupMode;
  /**
   * With `dedup: 'watermark+ids'`: when the id records expire (their `expires_at`), in
   * milliseconds; at most `retentionMs`. Default 1 day. Refused with another mode. The
   * retention job deletes an expired record once it is also older than the job's own
   * `retentionMs`.
   */
  readonly idRetentionMs?: number;
}

/** How an inbox recognises redeliveries: see {@link InboxOptions.dedup}. */
export type InboxDedupMode = 'ids' | 'watermark' | 'watermark+ids';

/** Per-call options of {@link Inbox.process} and {@link Inbox.processBatch}. */
export interface InboxProcessOptions {
  /**
   * Passed to handlers as `ctx.signal`; abort it when the consumer shuts down or the
   * delivery went stale. Default: a signal that never aborts.
   */
  readonly signal?: AbortSignal;
  /**
   * The broker the delivery came from, for its `process` span (`messaging.system`, the
   * destination when it is not the delivery's `source`, the consumer group). Each transport
   * passes its own; see docs/observability.md.
   */
  readonly messaging?: MessagingSystem;
}

/** The inbox of one consumer. */
export interface Inbox<Tx = Knex.Transaction> {
  readonly consumer: string;
  /**
   * What the inbox was built with, defaults applied, for a transport to check against its
   * broker (the SQS consumer warns when `maxAttempts` is not below the queue's
   * `maxReceiveCount`). Read-only. Every inbox `createInbox` returns has it; an inbox of your
   * own may leave it out, and transports then skip those checks.
   */
  readonly settings?: {
    /** The consumer name; dedup is per consumer. */
    readonly consumer: string;
    /** Attempts before a message is dead-lettered. */
    readonly maxAttempts: number;
    /** Scope for envelopes that carry none. */
    readonly defaultScope: string;
    /** How long dedup records are kept, in milliseconds. */
    readonly retentionMs: number;
    /**
     * How redeliveries are recognised (see {@link InboxOptions.dedup}); `createInbox` always
     * sets it, an inbox of your own may leave it out (read as `'ids'`).
     */
    readonly dedup?: InboxDedupMode;
  };
  /** Handles one delivery in its own transaction. Never throws for handler errors or bad input. */
  process<R>(
    envelope: Envelope,
    handler: Handler<R, Tx>,
    options?: InboxProcessOptions,
  ): Promise<InboxOutcome<R>>;
  /**
   * Handles many deliveries in one transaction with one multi-row dedup insert; only new
   * ids reach the handler; a failing message does not stop the others from committing.
   * Outcomes come back in input order.
   */
  processBatch<R>(
    envelopes: readonly Envelope[],
    handler: Handler<R, Tx>,
    options?: InboxProcessOptions,
  ): Promise<InboxOutcome<R>[]>;
  /**
   * Writes the activity counts not yet flushed (see `activityFlushMs`) now. Call it after
   * the consumer stopped, on a graceful shutdown. Never rejects: a failed write is logged at
   * warn and the counts are kept for the next flush.
   */
  flushActivity(): Promise<void>;
}
