import type { Meter } from '@opentelemetry/api';
import type { Logger } from '../observability/logger';
import type { Store } from '../store/store';

/**
 * The tables the retention job cleans by row deletes (and, on the partitioned layout, by
 * dropping partitions). A partitioned outbox is cleaned too, by dropping partitions only:
 * {@link RetentionRunResult.tables} reports it as `outbox`.
 */
export type RetentionTable =
  'idempotency' | 'inbox_records' | 'inbox_attempts' | 'dead_letters' | 'consumer_activity';

/** Options of {@link createRetention}. Every value is validated at construction. */
export interface RetentionOptions {
  /** The store whose tables are cleaned. */
  readonly store: Store;
  /**
   * The retention window, in milliseconds: no dedup record written within it is ever
   * deleted (even when its own `expires_at` has passed), and attempt counters untouched for
   * longer are removed. Default 7 days. Must be at least `redeliveryHorizonMs`.
   */
  readonly retentionMs?: number;
  /**
   * How long the transport may redeliver a message, in milliseconds (SQS: the retention
   * period of the queue; Kafka: the topic's `retention.ms`; RabbitMQ: the queue's message
   * TTL). When given, a shorter `retentionMs` is refused with
   * {@link RetentionTooShortError}. Default: unknown, not checked.
   */
  readonly redeliveryHorizonMs?: number;
  /**
   * Opt-in: delete dead letters older than this, in milliseconds (by `dead_at`); on a
   * partitioned outbox, also let dead events that died longer ago than this go with their
   * partition. Default: dead letters and dead events are kept until someone deletes them.
   */
  readonly deadLetterRetentionMs?: number;
  /** Rows deleted per statement. Default 1000; at most 100 000. */
  readonly batchSize?: number;
  /** Batches per table in one `runOnce`; the rest waits for the next run. Default 100. */
  readonly maxBatchesPerRun?: number;
  /** Pause between two batches, in milliseconds, to leave room for writers. Default 0. */
  readonly pauseBetweenBatchesMs?: number;
  /** Called after every batch statement, e.g. for progress reports. */
  readonly onBatch?: (batch: RetentionBatch) => void;
  /** Where log lines go. Default: nowhere. */
  readonly logger?: Logger;
  /** OpenTelemetry meter. Default: the global provider's `@justonce/core` meter. */
  readonly meter?: Meter;
}

/** One batch statement of a cleanup run. */
export interface RetentionBatch {
  readonly table: RetentionTable;
  /** Rows this statement deleted (at most `batchSize`). */
  readonly deleted: number;
  /** How long the statement took, in milliseconds. */
  readonly durationMs: number;
}

/** What a run did to one table. */
export interface TableCleanup {
  /** Rows deleted. */
  readonly deleted: number;
  /** Batch statements executed, including a last one that found fewer than `batchSize`. */
  readonly batches: number;
  /**
   * `true` when the last batch found fewer rows than `batchSize`, so nothing stale was left
   * (that the run could see); `false` when `maxBatchesPerRun` or a stop cut the run short.
   */
  readonly complete: boolean;
  /**
   * Why the table was not cleaned: `disabled` (no window configured for it, e.g. dead
   * letters without `deadLetterRetentionMs`) or `missing` (the schema has no such table).
   */
  readonly skipped?: 'disabled' | 'missing';
  /** On a table of the partitioned layout: what the pass did to its partitions. */
  readonly partitions?: PartitionCleanup;
}

/**
 * What a retention pass did to the partitions of a table of the partitioned layout
 * (`layout: 'partitioned'`, docs/store.md). Rows of dropped partitions are not counted in
 * `deleted`, which counts row deletes only.
 */
export interface PartitionCleanup {
  /** Partitions detached and dropped whole: every row past the window and its expiry. */
  readonly dropped: number;
  /** Partitions created ahead (and the default one, when it was missing). */
  readonly created: number;
  /**
   * A lock on the table was not granted within the store's `partitions.lockTimeoutMs`: the
   * partitions not yet created or dropped are left to the next pass.
   */
  readonly busy: boolean;
}

/** What {@link Retention.runOnce} did. */
export interface RetentionRunResult {
  /**
   * Per table; `outbox` only when the outbox is partitioned (`layout: 'partitioned'`), where
   * the pass drops its partitions (docs/retention.md, "The partitioned layout").
   */
  readonly tables: Readonly<Record<RetentionTable, TableCleanup>> & {
    readonly outbox?: TableCleanup;
  };
  /** Rows deleted across all tables. */
  readonly deleted: number;
  /** Every table was cleaned to the end. */
  readonly complete: boolean;
}

/** The retention job of one store. Create with {@link createRetention}. */
export interface Retention {
  /** The validated retention window, in milliseconds. */
  readonly retentionMs: number;
  /**
   * Runs one cleanup pass over every table, in batches, and resolves to what it deleted.
   * `signal` stops it between batches.
   */
  runOnce(options?: { readonly signal?: AbortSignal }): Promise<RetentionRunResult>;
  /**
   * Runs cleanup in the background: a pass at once, then one every `intervalMs` (default
   * 60 000), or right after `pauseBetweenBatchesMs` while a pass was cut short by
   * `maxBatchesPerRun`. Errors are logged and the loop goes on. Calling it again while
   * started does nothing. Its timers do not keep the process alive.
   */
  start(intervalMs?: number): void;
  /** Stops the loop after the current batch and resolves when it has stopped. Idempotent. */
  stop(): Promise<void>;
}
