import type {
  DeadLetter,
  DeadLetterReason,
  DeadLetters,
  ListDeadLettersOptions,
} from '../dead-letters/types';
import type { JustonceError } from '../errors/justonce-error';
import type { OperationStatus as RecordStatus } from '../operations/types';
import type { ReplicationSlotStatus } from './replication-slot-types';
import type { ConsumerResilience } from './resilience-types';
import type { RetentionBatch, RetentionRunResult } from '../retention/types';

export type { ReplicationSlotStatus, ReplicationSlotWalStatus } from './replication-slot-types';
export type { BreakerStatus, ConsumerResilience } from './resilience-types';

/** One outbox destination's figures in {@link StoreStatus}. */
export interface DestinationStatus {
  /** Topic, queue or exchange the relay publishes to. */
  readonly destination: string;
  /** Events waiting to be published. */
  readonly pending: number;
  /** Age in seconds of the oldest pending event (by `created_at`); `null` when none pend. */
  readonly oldestPendingSeconds: number | null;
  /** Events the relay gave up on (`status = 'dead'`). */
  readonly dead: number;
}

/** Waiting (not requeued) dead letters of one consumer and reason. */
export interface DeadLetterCount {
  readonly consumer: string;
  readonly reason: DeadLetterReason;
  readonly count: number;
  /** When the newest of them was dead-lettered. */
  readonly newestAt: Date;
}

/**
 * Records of one inbox consumer or operation name. Their records live apart (`inbox_records`
 * and `idempotency`); a consumer and an operation of the same name share this one entry.
 */
export interface ConsumerActivity {
  /** The inbox consumer's or the operation's name. */
  readonly name: string;
  /** Records completed (`SUCCEEDED`) that were created within the last hour. */
  readonly handledLastHour: number;
  /**
   * Duplicate deliveries the inbox acknowledged without handling, within the last hour, as
   * the inboxes recorded them (see `activityFlushMs`); 0 for operations.
   */
  readonly duplicatesLastHour: number;
  /** Deliveries the inbox dead-lettered (payload conflicts included) within the last hour. */
  readonly deadLetteredLastHour: number;
}

/** Records held `IN_PROGRESS` for one operation (inbox records are never in progress). */
export interface OperationStatus {
  readonly operation: string;
  /** In progress with a lease that has not run out. */
  readonly inProgress: number;
  /** In progress with a lease that ran out: the owner died or hangs. */
  readonly pastLease: number;
}

/**
 * What waits for cleanup. Each count stops at {@link RetentionBacklog.countLimit}, so that
 * `status()` stays fast however many rows the tables keep: a figure equal to the limit means
 * at least that many.
 */
export interface RetentionBacklog {
  /** Dedup records past their own `expires_at` (an upper bound: see the retention window). */
  readonly expiredDedupRecords: number;
  /** Published outbox rows kept until the relay's cleanup deletes them. */
  readonly publishedOutboxRows: number;
  /** Where each count above stops (100 000). */
  readonly countLimit: number;
}

/** One read of the store's state: what `justonce status` and the dashboard show. */
export interface StoreStatus {
  readonly schema: string;
  /** When the figures were read (the database's clock). */
  readonly at: Date;
  readonly outbox: readonly DestinationStatus[];
  readonly deadLetters: readonly DeadLetterCount[];
  readonly consumers: readonly ConsumerActivity[];
  readonly operations: readonly OperationStatus[];
  readonly retention: RetentionBacklog;
  /**
   * The logical replication slots of the database (see {@link Admin.replicationSlots}); empty
   * on PGlite and MySQL, and on a PostgreSQL database without any.
   */
  readonly slots: readonly ReplicationSlotStatus[];
  /** The load shedding of the consumers with `resilience` set that reported it in the last day. */
  readonly resilience: readonly ConsumerResilience[];
}

/** An outbox event as an operator sees it. */
export interface OutboxEntry {
  /** Row id (decimal string). */
  readonly id: string;
  readonly destination: string;
  readonly key: string | null;
  readonly messageId: string;
  readonly status: 'pending' | 'published' | 'dead';
  readonly headers: Readonly<Record<string, string>>;
  readonly payload: Uint8Array;
  /** Publish attempts made. */
  readonly attempts: number;
  readonly lastError: string | null;
  readonly createdAt: Date;
  /** When the relay may try it next (pending), or when it was given up on (dead). */
  readonly availableAt: Date;
  readonly publishedAt: Date | null;
}

/** Filters of {@link AdminOutbox.list}; all optional and combined with "and". */
export interface ListOutboxOptions {
  /**
   * `dead` (default): given up on; `pending`: waiting; `stuck`: pending and created more
   * than `stuckAfterMs` ago, or pending with at least one failed attempt.
   */
  readonly status?: 'dead' | 'pending' | 'stuck';
  /** For `stuck`: age in milliseconds past which a pending event counts. Default 60 000. */
  readonly stuckAfterMs?: number;
  readonly destination?: string;
  /** Created at or after. */
  readonly since?: Date;
  /** Created before. */
  readonly until?: Date;
  /** Only these row ids. */
  readonly ids?: readonly string[];
  /** 1–1000, default 100. */
  readonly limit?: number;
  /** Cursor: rows with an id greater than this one. */
  readonly after?: string;
}

/**
 * Options of {@link AdminOutbox.select}: the filters of {@link ListOutboxOptions}, with
 * `limit` bounding the whole selection instead of one page.
 */
export interface SelectOutboxOptions extends Omit<ListOutboxOptions, 'limit'> {
  /** Most events to read in all, a positive integer. Default: every event that matches. */
  readonly limit?: number;
}

/** The outbox, for operators: list and inspect dead and stuck events, requeue or delete them. */
export interface AdminOutbox {
  /** Events in id order, filtered and paged by `options` (dead ones by default). */
  list(options?: ListOutboxOptions): Promise<OutboxEntry[]>;
  /**
   * Every event matching `options` (dead ones by default), in id order, read page by page with
   * `list` (at most 1000 rows a page, each page after the last id of the one before), from
   * `options.after` on, until `options.limit` events or the end. Nothing is read until it is
   * iterated. `limit` and unknown keys are checked at the call, the filters on the first page,
   * before any SQL: a bad one is a `ConfigurationError`.
   */
  select(options?: SelectOutboxOptions): AdminSelection<OutboxEntry>;
  /** One event by row id, or `undefined`; a malformed id is a `ConfigurationError`. */
  get(id: string): Promise<OutboxEntry | undefined>;
  /**
   * Puts a dead event back as pending at the end of its key's queue (new row id, same message
   * id, attempts reset). Resolves to the new row id, or `null` when `id` is not a dead event.
   */
  requeue(id: string): Promise<string | null>;
  /** Deletes a dead or pending event for good; `true` when one was deleted. */
  delete(id: string): Promise<boolean>;
}

/** A dedup record (an operation's, or an inbox consumer's claim). */
export interface OperationRecord {
  readonly scope: string;
  readonly operation: string;
  readonly key: string;
  readonly status: RecordStatus;
  /** SHA-256 of the request (operations), or the payload fingerprint (inbox); `null` if none. */
  readonly requestHash: string | null;
  readonly ownerId: string | null;
  readonly leaseUntil: Date | null;
  /** `true` when in progress and the lease ran out. */
  readonly pastLease: boolean;
  readonly attempts: number;
  readonly createdAt: Date;
  readonly updatedAt: Date;
  readonly expiresAt: Date | null;
  /** The stored response (JSON), if any. */
  readonly response: unknown;
  /** The stored error (JSON), if any. */
  readonly error: unknown;
}

/** Filters of {@link AdminOperations.list}. */
export interface ListOperationsOptions {
  /** `in-progress` (default) or `past-lease` (in progress, lease ran out). */
  readonly state?: 'in-progress' | 'past-lease';
  readonly operation?: string;
  readonly scope?: string;
  /** 1–1000, default 100. */
  readonly limit?: number;
}

/** Identifies one record. `scope` defaults to `'default'`. */
export interface OperationRef {
  readonly operation: string;
  readonly key: string;
  readonly scope?: string;
}

/** Operations and inbox claims, for operators. */
export interface AdminOperations {
  /** Records in progress, those whose lease ran out first. */
  list(options?: ListOperationsOptions): Promise<OperationRecord[]>;
  /**
   * One record, whatever its status (expired ones included), or `undefined`: the operation's
   * record, else the dedup record of the inbox consumer of that name (`key` the message id).
   */
  get(ref: OperationRef): Promise<OperationRecord | undefined>;
  /**
   * Releases a record stuck in progress, so the next call (or redelivery) runs the effect
   * again: it becomes `FAILED_RETRIABLE` with the error code `RELEASED`, its owner and lease
   * cleared (the request hash is kept, so only the same request takes it over). Only a record past
   * its lease, unless `force` (the owner may still be running: its completion is then refused
   * by fencing). Resolves to `true` when released, `false` when there was nothing to release.
   */
  release(ref: OperationRef, options?: { force?: boolean }): Promise<boolean>;
}

/** Options of {@link Admin.redeliverDeadLetter}. */
export interface RedeliverOptions {
  /**
   * Where the relay publishes it. Default: the topic, queue or exchange it was delivered
   * from (`delivery.source`); a letter without one needs this option.
   */
  readonly destination?: string;
}

/** Options of {@link Admin.cleanup}. */
export interface AdminCleanupOptions {
  /** The retention window in milliseconds (see `createRetention`). Default 7 days. */
  readonly retentionMs?: number;
  /** Also delete dead letters older than this. Default: keep them. */
  readonly deadLetterRetentionMs?: number;
  /** Also delete published outbox rows older than this. Default 24 hours. */
  readonly publishedOutboxMs?: number;
  /** Rows deleted per statement, 1–100 000. Default 1000. */
  readonly batchSize?: number;
  /** Called after every batch statement. */
  readonly onBatch?: (batch: RetentionBatch | OutboxCleanupBatch) => void;
}

/** One batch statement of the published outbox rows' cleanup. */
export interface OutboxCleanupBatch {
  readonly table: 'outbox';
  /** Rows this statement deleted (at most `batchSize`). */
  readonly deleted: number;
  /** How long the statement took, in milliseconds. */
  readonly durationMs: number;
}

/** What {@link Admin.cleanup} deleted; `deleted` counts the outbox rows too. */
export interface AdminCleanupResult extends RetentionRunResult {
  /** Published outbox rows deleted. */
  readonly outboxDeleted: number;
}

/**
 * Rows selected by filters, read page by page as they are iterated (`for await`), or all at
 * once with `toArray`. Each iteration reads the store again from the first page.
 */
export interface AdminSelection<Row> extends AsyncIterable<Row> {
  /** Every row of the selection, in id order. */
  toArray(): Promise<Row[]>;
}

/**
 * Options of {@link AdminDeadLetters.select}: the filters of `ListDeadLettersOptions`, with
 * `limit` bounding the whole selection instead of one page.
 */
export interface SelectDeadLettersOptions extends Omit<ListDeadLettersOptions, 'limit'> {
  /** Most letters to read in all, a positive integer. Default: every letter that matches. */
  readonly limit?: number;
}

/** Dead letters, for operators: those of `createDeadLetters`, and selection by filters. */
export interface AdminDeadLetters extends DeadLetters {
  /**
   * Every letter matching `options`, in id order, read page by page with `list` (at most 1000
   * rows a page, each page after the last id of the one before), from `options.after` on,
   * until `options.limit` letters or the end. Requeued letters are included unless
   * `includeRequeued: false`, as with `list`. Nothing is read until it is iterated. `limit`
   * and unknown keys are checked at the call, the filters on the first page, before any SQL:
   * a bad one is a `ConfigurationError`.
   */
  select(options?: SelectDeadLettersOptions): AdminSelection<DeadLetter>;
}

/** One item {@link Admin.bulk} did: its id, and what the action resolved to. */
export interface BulkDone<Result> {
  readonly id: string;
  readonly result: Result;
}

/** One item {@link Admin.bulk} could not do. */
export interface BulkFailure {
  readonly id: string;
  /**
   * The refusal the action threw (gone, wrong state, no destination, not redeliverable);
   * absent when it resolved `false` or `null`: nothing there to change.
   */
  readonly error?: JustonceError;
}

/** What {@link Admin.bulk} did, each list in the order of the ids. */
export interface BulkResult<Result> {
  readonly done: BulkDone<Result>[];
  readonly failed: BulkFailure[];
}

/** Options of {@link Admin.bulk}. */
export interface BulkOptions<Result> {
  /** Called after each item, done or failed (e.g. to draw a progress bar). */
  readonly onItem?: (outcome: BulkDone<Result> | BulkFailure) => void;
}

/**
 * The operator's view of a store: what `justonce` (the CLI) and the dashboard are built on.
 * Create with `createAdmin(store)`.
 */
export interface Admin {
  status(): Promise<StoreStatus>;
  readonly deadLetters: AdminDeadLetters;
  /**
   * Requeues a dead letter and, in the same transaction, adds its message to the outbox (its
   * message id, key, headers and body as bytes), so that a running relay publishes it again
   * (a notification wakes it) and a running consumer handles it once. Resolves to the new
   * outbox row id.
   *
   * The outbox holds one row per message id. When a row of this message id is already there
   * (the event first came from this store's outbox and its published row is kept, or the
   * letter was redelivered before), that row is deleted and a new pending one inserted: it
   * gets a fresh row id, so, like the relay's own requeue, it goes to the end of its key's
   * queue instead of overtaking events added since.
   *
   * Redelivering a letter twice is allowed: once handled, the consumer acknowledges the
   * second copy as a duplicate, so the effect still happens once.
   *
   * Throws `DeadLetterNotFoundError` for an unknown id, `DeadLetterNotRedeliverableError`
   * for a letter without a message id (or with one the outbox cannot store exactly), and
   * `ConfigurationError` when no destination is known; nothing is changed then.
   */
  redeliverDeadLetter(id: string, options?: RedeliverOptions): Promise<string>;
  readonly outbox: AdminOutbox;
  readonly operations: AdminOperations;
  /**
   * The logical replication slots of this database (`pg_replication_slots` where
   * `slot_type = 'logical'` and `database = current_database()`), by name, with their lag.
   * Empty on PGlite and MySQL, which have none. It reads no justonce table.
   */
  replicationSlots(): Promise<ReplicationSlotStatus[]>;
  /**
   * Drops a logical replication slot of this database, so that PostgreSQL can remove the WAL
   * it holds. Only for a slot nothing will read again: a log relay on it would have to be
   * seeded anew. Throws `ConfigurationError` for a name PostgreSQL cannot have (lower-case
   * letters, digits and `_`, at most 63), `ReplicationSlotNotFoundError` when this database
   * has no logical slot of that name (always on PGlite and MySQL), and
   * `ReplicationSlotActiveError` when a connection is reading it; nothing is dropped then.
   */
  dropReplicationSlot(name: string): Promise<void>;
  /** Runs retention now over every table and the published outbox rows. */
  cleanup(options?: AdminCleanupOptions): Promise<AdminCleanupResult>;
  /**
   * Runs `act` on each id in turn, one at a time, and says which were done and which failed.
   * An item fails when `act` resolves `false` or `null` (nothing to change: gone, or not in a
   * state the action applies to) or throws a justonce error that is not retriable (a refusal
   * such as `DEAD_LETTER_NOT_FOUND`, `DEAD_LETTER_NOT_REDELIVERABLE`, `INVALID_CONFIG`); the
   * other items go on. Anything else stops the run and rejects with that error: a retriable
   * justonce error (`STORE_TIMEOUT`, `STORE_UNAVAILABLE`) or a driver's error is an outage
   * that every remaining item would run into; the items before it stay done.
   *
   * @example
   * ```ts
   * const letters = admin.deadLetters.select({ consumer: 'billing', includeRequeued: false });
   * const ids = (await letters.toArray()).map((letter) => letter.id);
   * const { done, failed } = await admin.bulk(ids, (id) => admin.redeliverDeadLetter(id));
   * ```
   */
  bulk<Result>(
    ids: Iterable<string> | AsyncIterable<string>,
    act: (id: string) => Promise<Result>,
    options?: BulkOptions<Exclude<Result, false | null>>,
  ): Promise<BulkResult<Exclude<Result, false | null>>>;
}
