import type { Knex } from 'knex';
import { systemClock } from '../retry/clock';
import { tableKind } from '../store/partitions/catalog';
import { dropExpiredPartitions } from './drop-partitions';
import type { RetentionRuntime } from './runtime';
import { deleteBatch, type BatchCursor } from './sql/delete-batch';
import { cleanupCondition, type CleanupTarget } from './targets';
import { isMysql } from '../store/dialect';
import { mysqlTableKind } from './sql/mysql/table-kind';
import type { RetentionTable, TableCleanup } from './types';

/** Row deletes so far in one table's pass. */
interface Progress {
  deleted: number;
  batches: number;
}

/**
 * Deletes what `condition` selects from `table` (one plain table or one partition), one
 * short batch at a time, until a batch comes back short (true), or the run's batch budget is
 * spent or `signal` aborts (false). `progress` carries the counts across the partitions of
 * one table, which share the budget.
 */
async function deleteInBatches(
  rt: RetentionRuntime,
  target: CleanupTarget & { readonly table: RetentionTable },
  table: string,
  condition: { sql: string; bindings: Knex.Value[] },
  signal: AbortSignal | undefined,
  progress: Progress,
): Promise<boolean> {
  const { store, maxBatchesPerRun, pauseMs, batchSize, onBatch } = rt.options;
  const cursor: BatchCursor = { column: target.walk, from: undefined };
  while (progress.batches < maxBatchesPerRun) {
    if (signal?.aborted) return false;
    if (progress.batches > 0 && pauseMs > 0) {
      // A stop ends the pause at once: the pass stops between two batches either way.
      const paused = await systemClock.sleep(pauseMs, signal).then(
        () => true,
        () => false,
      );
      if (!paused) return false;
    }
    const started = performance.now();
    const { sql, bindings } = condition;
    const gone = await deleteBatch(store.knex, table, sql, bindings, batchSize, cursor);
    const durationMs = performance.now() - started;
    progress.batches += 1;
    progress.deleted += gone;
    rt.batchDuration.record(durationMs, { table: target.table });
    if (gone > 0) rt.deleted.add(gone, { table: target.table });
    onBatch?.({ table: target.table, deleted: gone, durationMs });
    if (gone < batchSize) return true;
  }
  return false;
}

/**
 * Cleans one table: deletes what its cleanup condition selects, one short batch at a time,
 * until a batch comes back short, the run's batch budget is spent or `signal` aborts. On the
 * partitioned layout, whole partitions go first ({@link dropExpiredPartitions}) and row
 * deletes run only on what they leave, partition by partition (a row's `ctid` names it only
 * within its partition). A table that does not exist (its migration was not run) is skipped
 * rather than failing the whole pass. Resolves to `undefined` for a table cleaned on the
 * partitioned layout only (the outbox) that is plain: it is not reported. @internal
 */
export async function cleanTable(
  rt: RetentionRuntime,
  target: CleanupTarget,
  signal: AbortSignal | undefined,
): Promise<TableCleanup | undefined> {
  const { store, windows } = rt.options;
  const table = store.names.table(target.table);
  if (target.partitioned?.only === true || target.table === 'outbox') {
    // MySQL keeps the plain layout, where such a table is not cleaned by retention.
    if (isMysql(store) || (await tableKind(store.knex, table)) !== 'p') return undefined;
    const { dropped, created, busy } = await dropExpiredPartitions(rt, target, table);
    return { deleted: 0, batches: 0, complete: true, partitions: { dropped, created, busy } };
  }
  const rows = { ...target, table: target.table }; // narrowed: the outbox returned above
  const condition = cleanupCondition(rows, windows, store.names);
  if (condition === undefined) {
    return { deleted: 0, batches: 0, complete: true, skipped: 'disabled' };
  }
  // MySQL keeps the plain layout: never a partitioned parent, so never a partition to drop.
  const kind = isMysql(store)
    ? await mysqlTableKind(store.knex, table)
    : await tableKind(store.knex, table);
  if (kind === undefined) {
    return { deleted: 0, batches: 0, complete: true, skipped: 'missing' };
  }
  const progress: Progress = { deleted: 0, batches: 0 };
  if (kind === 'r') {
    const complete = await deleteInBatches(rt, rows, table, condition, signal, progress);
    return { ...progress, complete };
  }
  const pass = await dropExpiredPartitions(rt, target, table);
  let complete = true;
  for (const leaf of pass.rowTables) {
    complete = await deleteInBatches(rt, rows, leaf, condition, signal, progress);
    if (!complete) break;
  }
  const { dropped, created, busy } = pass;
  return { ...progress, complete, partitions: { dropped, created, busy } };
}
