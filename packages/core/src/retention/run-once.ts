import { cleanTable } from './clean-table';
import type { RetentionRuntime } from './runtime';
import { CLEANUP_TARGETS } from './targets';
import type { RetentionRunResult, RetentionTable, TableCleanup } from './types';

/**
 * One retention pass over every cleanup target, in order. Once `signal` aborts, the tables
 * not yet reached are reported incomplete without touching the database. @internal
 */
export async function runOnce(
  rt: RetentionRuntime,
  runOptions: { readonly signal?: AbortSignal } = {},
): Promise<RetentionRunResult> {
  const tables = {} as Record<RetentionTable, TableCleanup> & { outbox?: TableCleanup };
  let deleted = 0;
  let complete = true;
  for (const target of CLEANUP_TARGETS) {
    // A table cleaned on the partitioned layout only is not reported unread.
    if (runOptions.signal?.aborted && target.partitioned?.only === true) continue;
    const result = runOptions.signal?.aborted
      ? { deleted: 0, batches: 0, complete: false }
      : await cleanTable(rt, target, runOptions.signal);
    if (result === undefined) continue;
    tables[target.table] = result;
    deleted += result.deleted;
    complete &&= result.complete;
  }
  // Quiet passes stay out of the log: a job running every minute would otherwise flood it.
  if (deleted > 0 || !complete) {
    rt.options.logger.info('retention pass finished', {
      deleted,
      complete,
      ...Object.fromEntries(
        Object.entries(tables).map(([table, result]) => [table, result.deleted]),
      ),
    });
  }
  return { tables, deleted, complete };
}
