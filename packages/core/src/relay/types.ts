import type { Meter } from '@opentelemetry/api';
import type { Logger } from '../observability/logger';
import type { Store } from '../store/store';
import type { Publisher } from '../transport/publisher';

/**
 * How a relay finds committed events: `'poll'` claims them from the outbox table (every
 * store); `'log'` reads their inserts from a PostgreSQL logical replication slot
 * (docs/relays.md, "Logical replication").
 */
export type RelayMode = 'poll' | 'log';

/** Options of the `'log'` mode ({@link RelayOptions.log}). Validated when the relay is created. */
export interface LogRelayOptions {
  /**
   * The logical replication slot the relay reads (`pgoutput`). Lower-case letters, digits
   * and `_`, at most 63. Default `<schema>_<tablePrefix>outbox`.
   */
  readonly slot?: string;
  /**
   * The publication on the outbox table alone (inserts only). Lower-case letters, digits and
   * `_`, at most 63. Default: the slot's name.
   */
  readonly publication?: string;
  /**
   * `true` (default): `start()` creates the publication, then the slot, when missing (the
   * role needs `REPLICATION` and ownership of the outbox table). `false`: they must exist,
   * or `start()` throws a {@link ConfigurationError} with the statements that create them.
   */
  readonly create?: boolean;
  /**
   * How often a relay whose slot another process reads (PostgreSQL allows one reader per
   * slot) tries to take it over. A standby takes over within about this long once the
   * reader's connection is gone. From 50 to 60 000; default 2 000.
   */
  readonly standbyRetryMs?: number;
  /**
   * How often the relay reports its confirmed position to the server when nothing else
   * makes it (it also does so after each acknowledged batch and when the server asks).
   * Must stay below the server's `wal_sender_timeout` (default 60 s). From 100 to 30 000;
   * default 10 000.
   */
  readonly statusIntervalMs?: number;
  /**
   * `true`: take over from polling relays by id, so that no event is lost or published twice.
   * Once the slot exists, the relay records the outbox id sequence's last value (the
   * boundary) in the `relay_cutover` table of the store, waits for the transactions running
   * then to end, publishes the pending rows up to the boundary from the table (marking them
   * published, or dead), and then streams only the inserts above it. Every polling relay of
   * this outbox must be stopped before this relay starts. The outbox's id sequence must not
   * cache values. Default `false` (docs/relays.md, "Switching from polling").
   */
  readonly takeOverFromPolling?: boolean;
}

/** How a relay claims events: see {@link RelayOptions.claim}. */
export type RelayClaim = 'batch' | 'per-key';

/** Options of {@link createRelay}. Every number is validated when the relay is created. */
export interface RelayOptions {
  /** The store the outbox lives in. */
  readonly store: Store;
  /** Where events go; the caller owns it (the relay never closes it). */
  readonly publisher: Publisher;
  /**
   * `'poll'` (default, and the only mode on PGlite, MySQL and MariaDB) or `'log'`: read the
   * outbox's inserts from a logical replication slot on PostgreSQL with `wal_level =
   * logical`, with no write per event (docs/relays.md). The options of claims and marks
   * (`concurrency`, `maxConcurrentPublishes`, `leaseMs`, `claimHoldMs`, `pollIntervalMs`,
   * `notify`, `onPublished`, `claim`) do not apply to `'log'` and are refused with it.
   */
  readonly mode?: RelayMode;
  /** The slot, publication and standby settings of `mode: 'log'`; refused in `'poll'`. */
  readonly log?: LogRelayOptions;
  /** Events per claim and at most per `publish` call. Default 200. */
  readonly batchSize?: number;
  /**
   * Claim–publish–mark cycles running at once in this relay, each on its own keys.
   * Default 2.
   */
  readonly concurrency?: number;
  /**
   * Most `publish` calls in flight at once, across all cycles. A held cycle publishes its keys
   * in this many lanes, one call in flight each. Below `concurrency`, extra cycles claim and
   * mark while others publish. Default: `concurrency`. `publishTimeoutMs` times the calls a
   * lane may wait for (`ceil(concurrency × lanes / maxConcurrentPublishes)`, its own included)
   * must stay below `leaseMs`.
   */
  readonly maxConcurrentPublishes?: number;
  /** Attempts before an event goes dead. Default 10. */
  readonly maxAttempts?: number;
  /** Full-jitter backoff between attempts of one event. Default `{ baseMs: 200, capMs: 60 000 }`. */
  readonly backoff?: { readonly baseMs?: number; readonly capMs?: number };
  /**
   * The longest a relay may hold a claim. A claim lives in the relay's transaction, and on
   * PostgreSQL the transaction carries `idle_in_transaction_session_timeout = leaseMs`: a
   * relay stuck longer loses its session and its claim, and the events go to whoever claims
   * them next (re-published with the same message ids). A killed relay's claim ends at once,
   * with its connection. MySQL has no such per-transaction limit: there a stuck relay's claim
   * lasts until its connection ends (on MariaDB, at the store's `idleInTransactionMs`).
   * Default 30 000.
   */
  readonly leaseMs?: number;
  /**
   * How long a cycle keeps the keys it claimed and goes on publishing their next events
   * before it commits and claims afresh, while its batches come back full. While one batch is
   * at the broker, the cycle reads the next and marks the one before, so the database's round
   * trips overlap the broker's. Events published in the hold are marked at its end: a crash
   * within it publishes them again (same message ids). `0`: one batch per claim. At most
   * `leaseMs / 2`. Default 1 000 (or `leaseMs / 3` if smaller); always 0 on PGlite, whose one
   * connection the cycle would keep from producers.
   */
  readonly claimHoldMs?: number;
  /**
   * Longest wait for one `publish` call; after it the batch counts as failed (retriable).
   * Must be below `leaseMs`. Default `min(10 000, leaseMs / (waits + 1))`, where `waits` is
   * the number of calls a lane may wait for (see `maxConcurrentPublishes`): 10 000 with the
   * defaults. In `mode: 'log'`, which holds no claim: up to an hour, default 10 000.
   */
  readonly publishTimeoutMs?: number;
  /**
   * Polling interval when idle (the fallback when notifications are off or lost, and the only
   * way on MySQL and MariaDB, which have no notifications: an event committed while the
   * relay is idle waits up to this long there). Default 1 000.
   */
  readonly pollIntervalMs?: number;
  /** Wake on LISTEN/NOTIFY (PostgreSQL). Default `true`; polling alone when `false`. */
  readonly notify?: boolean;
  /**
   * What happens to an event once published: `'delete'` (default) deletes it at once — the
   * cheapest mark, nothing to clean up; `'keep'` marks it `published` with `published_at`,
   * for inspection and for {@link Relay.cleanup} to delete later (a new row version with its
   * index entries per event: about half the relay's throughput on a busy database).
   */
  readonly onPublished?: 'keep' | 'delete';
  /**
   * How the relay claims: `'batch'` (default) locks the heads of many keys in one statement;
   * `'per-key'` locks each key's head in a statement of its own that names the key's
   * distribution column by equality (`distribution_key = $1 and id = $2`), and marks and
   * cleans up per key the same way, so that a distributed PostgreSQL (Citus) can route each
   * of them to one shard. It costs a round trip per key claimed instead of one per batch.
   * Needs a PostgreSQL store opened with `distribution: 'distributable'`; refused on PGlite,
   * MySQL and a store without that option. See docs/scaling.md.
   */
  readonly claim?: RelayClaim;
  /** Name of this relay in logs. Default `hostname:pid:random`. */
  readonly ownerId?: string;
  /** Default {@link silentLogger}. */
  readonly logger?: Logger;
  /** OpenTelemetry meter. Default: the global provider's `@justonce/core` meter. */
  readonly meter?: Meter;
}

/** Options of {@link Relay.stop}. */
export interface StopOptions {
  /**
   * `true`: keep publishing until nothing is claimable, then stop. `false` (default): finish
   * the batches in flight (publish and mark them) and stop.
   */
  readonly drain?: boolean;
  /**
   * Longest wait for in-flight batches. After it their transactions are rolled back (their
   * events become claimable at once) and `stop` resolves; a publish still running may then be
   * repeated by another relay, with the same message id. Default 30 000.
   */
  readonly timeoutMs?: number;
  /**
   * `mode: 'log'` only: hand the outbox back to polling relays, without pausing the writers
   * and without publishing an event twice (docs/relays.md, "Switching back to polling"). The
   * relay reading the slot records the outbox id sequence's last value as the boundary, waits
   * for the transactions running then, publishes from the slot every committed event up to
   * it (and none above it), marks those rows published, records the hand-back as done and
   * drops the slot. `stop` resolves once that is done: start the polling relays only then.
   * It rejects (code `HAND_BACK_INCOMPLETE`) when the relay is not running or `timeoutMs`
   * runs out first; the next log relay to read the slot finishes a hand-back that began. A
   * handed-back slot is never read again. Needs the id sequence without a cache (`cache 1`).
   */
  readonly handBackToPolling?: boolean;
}

/** What one claim–publish–mark cycle did. */
export interface CycleResult {
  /** Events claimed. */
  readonly claimed: number;
  /** Events marked published. */
  readonly published: number;
  /** Failed attempts recorded (dead ones included). */
  readonly failed: number;
  /** Events that went dead in this cycle. */
  readonly dead: number;
  /** Events left for a later cycle without an attempt (behind a failure of their key). */
  readonly released: number;
}

/** A point-in-time view of the outbox and this relay. */
export interface RelayStats {
  /** Pending events in the table (due or not, claimed or not). */
  readonly pending: number;
  /** Age of the oldest pending event in milliseconds; 0 when none is pending. */
  readonly oldestPendingAgeMs: number;
  /** Dead events in the table. */
  readonly dead: number;
  /** Events this relay marked published since it was created. */
  readonly published: number;
  /** Failed attempts this relay recorded since it was created. */
  readonly failed: number;
  /** Events this relay marked dead since it was created. */
  readonly markedDead: number;
  /** Events this relay published per second over the last 10 seconds. */
  readonly publishedPerSec: number;
  /** Whether the relay is woken by notifications right now (else it polls). */
  readonly listening: boolean;
  /**
   * In `mode: 'log'`: the slot as this relay sees it; absent in `'poll'`. `pending` and
   * `oldestPendingAgeMs` then count the events this relay has read and the broker has not
   * yet acknowledged (events still in the WAL show as `lagBytes`), `dead` the dead rows, and
   * `listening` whether it reads the slot now.
   */
  readonly log?: LogRelayStats;
}

/** The slot of a `mode: 'log'` relay ({@link RelayStats.log}). */
export interface LogRelayStats {
  readonly slot: string;
  /** Whether this relay reads the slot now (`false`: it stands by, or is reconnecting). */
  readonly active: boolean;
  /** The slot's `confirmed_flush_lsn` as the server reports it; null before it has one. */
  readonly confirmedLsn: string | null;
  /** WAL the slot retains: the server's current position minus the confirmed one, in bytes. */
  readonly lagBytes: number;
  /**
   * Seconds this relay is behind: since the commit of the oldest event it has read and the
   * broker has not acknowledged (0 when there is none), or, while it reconnects after
   * losing its stream, since it lost it. Null while it reads nothing of its own accord
   * (before its first session, or standing by).
   */
  readonly lagSeconds: number | null;
}

/** A dead event, as {@link Relay.listDead} returns it. */
export interface DeadEvent {
  /** Row id; pass it to {@link Relay.requeue}. */
  readonly id: string;
  readonly destination: string;
  readonly key: string | null;
  readonly messageId: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly payload: Uint8Array;
  /** Attempts made. */
  readonly attempts: number;
  /** The last publish error. */
  readonly lastError: string | null;
  /** When the event was added. */
  readonly createdAt: Date;
  /** When it was given up on. */
  readonly diedAt: Date;
}

/**
 * Options of {@link Relay.cleanup}. In `mode: 'log'` it deletes events older than
 * `olderThanMs` whatever their status but dead (the relay read them from the WAL, which a
 * deleted row does not change; docs/relays.md).
 */
export interface CleanupOptions {
  /** Keep published events (in `'log'` mode: every event but dead ones) at least this long. Default 24 hours. */
  readonly olderThanMs?: number;
  /** Rows per delete statement. Default 1 000. */
  readonly batchSize?: number;
  /** Stop after this many batches (more remain for the next call). Default unlimited. */
  readonly maxBatches?: number;
}

/**
 * Publishes committed outbox events through a {@link Publisher}: at least once, in order per
 * partition key, several relays at once.
 */
export interface Relay {
  /** This relay's name in logs. */
  readonly ownerId: string;
  /** Whether `start` was called and `stop` has not finished. */
  readonly running: boolean;
  /** Subscribes to notifications and starts the loops. */
  start(): Promise<void>;
  /** Stops gracefully: finishes or rolls back what it holds; see {@link StopOptions}. */
  stop(options?: StopOptions): Promise<void>;
  /**
   * Runs one claim–publish–mark cycle now (for tests and scripts; needs no `start`). In
   * `mode: 'log'`: reads the slot up to what had committed when it was called, publishes and
   * confirms it (nothing, when another process reads the slot).
   */
  runOnce(): Promise<CycleResult>;
  /** Counts from the table and this relay's counters. */
  stats(): Promise<RelayStats>;
  /** Dead events in id order, `limit` (default 100) after `afterId`. */
  listDead(options?: { limit?: number; afterId?: string }): Promise<DeadEvent[]>;
  /**
   * Puts a dead event back as pending with its attempts reset, at the end of its key's queue
   * (it gets a new row id and keeps its message id). Resolves to the new id, or `null` when
   * `id` is not a dead event.
   */
  requeue(id: string): Promise<string | null>;
  /**
   * Deletes published events in bounded batches (in `mode: 'log'`, every event older than
   * the window but dead ones); resolves to the number deleted.
   */
  cleanup(options?: CleanupOptions): Promise<number>;
}
