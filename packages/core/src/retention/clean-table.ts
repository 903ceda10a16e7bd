import { systemClock } from '../retry/clock';
import type { RetentionRuntime } from './runtime';
import { deleteBatch } from './sql/delete-batch';
import { tableExists } from './sql/table-exists';
import type { CleanupTarget } from './targets';
import type { TableCleanup } from './types';

/**
 * Deletes what one table's cleanup condition selects, one short batch at a time, until a
 * batch comes back short, the run's batch budget is spent or `signal` aborts. A table that
 * does not exist (its migration was not run) is skipped rather than failing the whole
 * pass. @internal
 */
export async function cleanTable(
  rt: RetentionRuntime,
  target: CleanupTarget,
  signal: AbortSignal | undefined,
): Promise<TableCleanup> {
  const { store, windows, maxBatchesPerRun, pauseMs, batchSize, onBatch } = rt.options;
  const condition = target.condition(windows);
  if (condition === undefined) {
    return { deleted: 0, batches: 0, complete: true, skipped: 'disabled' };
  }
  const table = store.names.table(target.table);
  if (!(await tableExists(store.knex, table))) {
    return { deleted: 0, batches: 0, complete: true, skipped: 'missing' };
  }
  let deleted = 0;
  let batches = 0;
  while (batches < maxBatchesPerRun) {
    if (signal?.aborted) break;
    if (batches > 0 && pauseMs > 0) {
      // A stop ends the pause at once: the pass stops between two batches either way.
      const paused = await systemClock.sleep(pauseMs, signal).then(
        () => true,
        () => false,
      );
      if (!paused) break;
    }
    const started = performance.now();
    const gone = await deleteBatch(store.knex, table, condition.sql, condition.bindings, batchSize);
    const durationMs = performance.now() - started;
    batches += 1;
    deleted += gone;
    rt.batchDuration.record(durationMs, { table: target.table });
    if (gone > 0) rt.deleted.add(gone, { table: target.table });
    onBatch?.({ table: target.table, deleted: gone, durationMs });
    if (gone < batchSize) return { deleted, batches, complete: true };
  }
  return { deleted, batches, complete: false };
}
