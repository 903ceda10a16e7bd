import type { Meter } from '@opentelemetry/api';
import type { Knex } from 'knex';
import type { TransactionAdapter } from '../transactions/types';
import type { Logger } from '../observability/logger';
import type { Store } from '../store/store';
import type { Once } from './once/types';

/**
 * Where a record is in its life (seed 004's state machine). A record that does not exist,
 * or whose `expires_at` has passed, is ABSENT.
 *
 * - `IN_PROGRESS`: an owner holds a lease and is running the effect.
 * - `SUCCEEDED`: the effect finished; its response is replayed to duplicates.
 * - `FAILED_RETRIABLE`: the effect failed in a way a retry may fix; the next call runs it again.
 * - `FAILED_FINAL`: the effect failed for good; duplicates get the stored failure.
 */
export type OperationStatus = 'IN_PROGRESS' | 'SUCCEEDED' | 'FAILED_RETRIABLE' | 'FAILED_FINAL';

/** A failure as it is stored in the record: enough to explain it, never a payload. */
export interface StoredOperationError {
  /** The error's `name`, e.g. `PaymentDeclinedError` (cut to 200 characters). */
  readonly name: string;
  /**
   * The error's message, cut to 1000 characters. Like `name` and `code`, made storable:
   * U+0000 is written as the six characters `\u0000`, a lone surrogate as U+FFFD.
   */
  readonly message: string;
  /** The error's `code` property, when it has a string one (cut to 200 characters). */
  readonly code?: string;
}

/** Options of {@link createOperations}. Every value is validated at construction. */
export interface OperationsOptions<Tx = Knex.Transaction> {
  /** Where the `idempotency` table lives (run `store.migrate()` first). */
  readonly store: Store;
  /**
   * Default operation name, e.g. `charge-card`. Each call may name its own instead; a call
   * that names none when this is unset is refused. Operation names share one namespace with
   * inbox consumer names, so do not reuse a consumer's name. 1–200 characters.
   */
  readonly operation?: string;
  /** Default scope (tenant). Default `default`. 1–200 characters. */
  readonly scope?: string;
  /**
   * How long a reservation is held before another caller may take it over, in
   * milliseconds, measured on the database clock. The effect may extend it through
   * `ctx.extendLease()`. Default 30 000.
   */
  readonly leaseMs?: number;
  /**
   * How long a duplicate that finds the key IN_PROGRESS waits for the owner to finish before
   * it gives up with {@link OperationInProgressError}, in milliseconds. Default 0: give up at
   * once.
   */
  readonly waitForInProgressMs?: number;
  /** How often a waiting duplicate re-reads the record, in milliseconds. Default 50. */
  readonly pollIntervalMs?: number;
  /**
   * How long a record answers for its key after it was last written, in milliseconds:
   * `expires_at` is set to now plus this on every write. After that the key is ABSENT and
   * runs again. Default 7 days. Each call may override it.
   */
  readonly retentionMs?: number;
  /** Largest response stored inline, in bytes of its JSON. Default 65 536 (64 KiB). */
  readonly maxResponseBytes?: number;
  /** Longest key accepted, in characters. Default 255. */
  readonly maxKeyLength?: number;
  /**
   * Decides whether an error thrown by an effect leaves the record FAILED_RETRIABLE (`true`:
   * the next call runs the effect again) or FAILED_FINAL (`false`: duplicates get the stored
   * failure). Default: the error's own boolean `retriable` property when it has one (every
   * justonce error, kafkajs errors), otherwise `true`.
   */
  readonly isRetriable?: (error: unknown) => boolean;
  /** Where log lines go. Default: nowhere. Requests and responses are never logged. */
  readonly logger?: Logger;
  /** OpenTelemetry meter. Default: the global provider's `@justonce/core` meter. */
  readonly meter?: Meter;
  /**
   * How `runInTransaction` opens the business transaction, and so what its effect receives:
   * a Drizzle, Kysely, TypeORM or node-postgres transaction through that library's adapter
   * (see docs/transactions.md). Default: a knex transaction on the store.
   */
  readonly transactions?: TransactionAdapter<Tx>;
}

/** Names the record a call works on, besides the key. */
export interface OperationTarget {
  /** Scope (tenant); records of one scope never answer for another. Default: the factory's. */
  readonly scope?: string;
  /** Operation name. Default: the factory's `operation`. */
  readonly operation?: string;
}

/** Options of {@link Operations.reserve}. */
export interface ReserveOptions extends OperationTarget {
  /** Overrides the factory's `retentionMs` for this record. */
  readonly retentionMs?: number;
}

/** Options of {@link Operations.run}. */
export interface RunOptions extends ReserveOptions {
  /** Overrides the factory's `waitForInProgressMs` for this call. */
  readonly waitForInProgressMs?: number;
  /**
   * Cancels the call: a wait for another owner stops with the signal's reason, and the
   * effect's `ctx.signal` is aborted with it.
   */
  readonly signal?: AbortSignal;
}

/**
 * Proof of ownership of a record, returned by a successful reservation. Every write made
 * with it is a compare-and-set on `ownerId`.
 */
export interface OperationRef {
  readonly scope: string;
  readonly operation: string;
  /** The idempotency key; pass it to the external API as its idempotency key. */
  readonly key: string;
  /** This reservation's owner id, a fresh UUID. */
  readonly ownerId: string;
  /** 1-based attempt: 1 for the first reservation, higher after retries and takeovers. */
  readonly attempt: number;
  /** Retention this record was reserved with, in milliseconds; finalizing applies it again. */
  readonly retentionMs: number;
}

/** What an effect receives: its identity and the capabilities to hold its reservation. */
export interface OperationContext {
  /** The idempotency key: pass it on to the external API (payment provider, …). */
  readonly key: string;
  readonly scope: string;
  readonly operation: string;
  /** This execution's owner id. */
  readonly ownerId: string;
  /** 1-based attempt: above 1 when an earlier owner failed retryably or lost its lease. */
  readonly attempt: number;
  /**
   * Aborted when the lease runs out before the effect returns (another caller may take over
   * from then on; the reason is a {@link LeaseLostError}), when `extendLease` finds the
   * record taken, or when the caller's own signal aborts.
   */
  readonly signal: AbortSignal;
  /**
   * Pushes the lease end to now (database clock) plus `ms`, default the factory's
   * `leaseMs`. Resolves to the new lease end; rejects with {@link LeaseLostError} when this
   * execution no longer owns the record.
   */
  extendLease(ms?: number): Promise<Date>;
  /**
   * Runs a side effect once per step of this execution and records its result in the
   * operations' store, outside any transaction: a later execution of the same record (a retry
   * after a retriable failure, a takeover after a lost lease) replays it instead of running it
   * again. See {@link Once} and docs/side-effects.md.
   */
  readonly once: Once;
}

/**
 * The external effect. It runs at most once per record at a time; it may run again after a
 * retriable failure or after its owner lost the lease, always with the same key. Its
 * response must be JSON data (it is stored and replayed as JSON).
 */
export type OperationEffect<R> = (ctx: OperationContext) => Promise<R>;

/**
 * Named points inside {@link Operations.runInTransaction}, for fault injection in tests
 * (throw there, or kill the process).
 */
export type TransactionalOperationStep =
  /** The record was reserved in its own short transaction; the business one is not open. */
  | 'reserved'
  /** The effect returned; the SUCCEEDED record is written but not committed. */
  | 'effect-done'
  /** The business transaction, with the record's SUCCEEDED, committed. */
  | 'committed';

/** Options of {@link Operations.runInTransaction}. */
export interface TransactionalRunOptions extends RunOptions {
  /**
   * Called at each {@link TransactionalOperationStep}; for fault injection in tests. A throw
   * there is taken as a crash at that point: the business transaction rolls back if it is
   * open, nothing is recorded (the record stays IN_PROGRESS until its lease runs out, or
   * SUCCEEDED after `committed`), and the call rejects with what was thrown.
   */
  readonly onStep?: (step: TransactionalOperationStep, ref: OperationRef) => void | Promise<void>;
}

/**
 * An effect that writes the business rows: it receives the open business transaction, in
 * which the record's SUCCEEDED and its response are written too, so both commit together
 * or not at all. Its response must be JSON data.
 */
export type TransactionalEffect<R, Tx = Knex.Transaction> = (
  trx: Tx,
  ctx: OperationContext,
) => Promise<R>;

/** The result of {@link Operations.reserve}. A hash mismatch throws {@link OperationConflictError}. */
export type Reservation =
  /** The caller owns the record now and must finalize it with `complete` or `fail`. */
  | {
      readonly kind: 'acquired';
      readonly ref: OperationRef;
      /** When the lease ends, on the database clock. */
      readonly leaseUntil: Date;
      /** Milliseconds left on the lease when it was granted (database clock). */
      readonly leaseRemainingMs: number;
    }
  /** The effect already succeeded; here is its stored response. */
  | { readonly kind: 'completed'; readonly response: unknown; readonly attempts: number }
  /** The effect failed for good; here is the stored failure. */
  | {
      readonly kind: 'failed';
      readonly failure: StoredOperationError;
      readonly attempts: number;
    }
  /** Another owner holds a live lease. */
  | {
      readonly kind: 'in-progress';
      readonly ownerId: string | undefined;
      readonly leaseUntil: Date | undefined;
      readonly attempts: number;
    };

/** A record as stored. The tables are not an API; this is the supported view of a row. */
export interface OperationRecord {
  readonly scope: string;
  readonly operation: string;
  readonly key: string;
  /** SHA-256 of the canonical JSON of the request; `undefined` for inbox rows. */
  readonly requestHash: string | undefined;
  readonly status: OperationStatus;
  /** The current or last owner. */
  readonly ownerId: string | undefined;
  /** End of the current lease; unset once finalized. */
  readonly leaseUntil: Date | undefined;
  /** The stored response of a SUCCEEDED record. */
  readonly response: unknown;
  /** The stored failure of a FAILED_* record. */
  readonly error: StoredOperationError | undefined;
  /** How many reservations the record has had since it was created. */
  readonly attempts: number;
  readonly createdAt: Date;
  readonly updatedAt: Date;
  /** When the record stops answering for its key; `undefined` means never. */
  readonly expiresAt: Date | undefined;
}

/** Idempotent operations over one store. Create with {@link createOperations}. */
export interface Operations<Tx = Knex.Transaction> {
  /** How `runInTransaction` opens business transactions (the `transactions` option). */
  readonly transactions: TransactionAdapter<Tx>;
  /**
   * Runs `effect` once for `(scope, operation, key)` and returns its response; a duplicate
   * call with the same request gets the stored response instead, byte for byte the JSON the
   * first caller got (`JSON.stringify` of both is identical, key order included). Rejects
   * with {@link InvalidOperationInputError} before any SQL for arguments it cannot use (a
   * key, scope or operation that is not text PostgreSQL stores exactly, an unserializable
   * request, malformed options or an option it does not take), with
   * {@link OperationConflictError} (same key, different request),
   * {@link OperationInProgressError} (another owner is running it and did not finish within
   * `waitForInProgressMs`), {@link OperationFailedError} (stored FAILED_FINAL),
   * {@link LeaseLostError} (this owner was fenced off before it could record the result),
   * {@link ResponseTooLargeError}, or the effect's own error (after recording it).
   */
  run<R>(
    key: string,
    request: unknown,
    effect: OperationEffect<R>,
    options?: RunOptions,
  ): Promise<R>;
  /**
   * Like {@link Operations.run}, for an effect that writes to the database: the reservation
   * is its own short transaction (so concurrent duplicates see IN_PROGRESS), then `effect`
   * runs inside a business transaction opened on the store, and the record's SUCCEEDED with
   * the response is written in that same transaction by compare-and-set on the owner. The
   * business rows, any `outbox.add` events and the record commit together or not at all:
   * there is no moment when the business write is committed while the key says IN_PROGRESS
   * or failed. A lease lost before the commit rolls the business transaction back
   * ({@link LeaseLostError}). When the effect throws, the transaction rolls back and the
   * failure is recorded (retriable or final, as `isRetriable` says) in its own statement.
   * Replays, conflicts, waiting and errors are as for `run`.
   */
  runInTransaction<R>(
    key: string,
    request: unknown,
    effect: TransactionalEffect<R, Tx>,
    options?: TransactionalRunOptions,
  ): Promise<R>;
  /**
   * Reserves the record atomically, for callers who drive the steps themselves. After
   * `acquired`, call {@link Operations.complete} or {@link Operations.fail} with the ref.
   */
  reserve(key: string, request: unknown, options?: ReserveOptions): Promise<Reservation>;
  /**
   * Records success and the response, if `ref` still owns the record; otherwise rejects with
   * {@link LeaseLostError}. Rejects with {@link ResponseTooLargeError} without writing when
   * the response is too large. Resolves to the response as it will be replayed (its JSON).
   */
  complete(ref: OperationRef, response: unknown): Promise<unknown>;
  /**
   * Records a failure, if `ref` still owns the record; otherwise rejects with
   * {@link LeaseLostError}. `retriable` picks FAILED_RETRIABLE or FAILED_FINAL.
   */
  fail(ref: OperationRef, error: unknown, options: { readonly retriable: boolean }): Promise<void>;
  /**
   * Extends the lease of `ref` to now plus `ms` (default `leaseMs`), if it still owns the
   * record; otherwise rejects with {@link LeaseLostError}. Resolves to the new lease end.
   */
  extendLease(ref: OperationRef, ms?: number): Promise<Date>;
  /** Reads the record; `undefined` when it does not exist or has expired. */
  get(key: string, options?: OperationTarget): Promise<OperationRecord | undefined>;
}
