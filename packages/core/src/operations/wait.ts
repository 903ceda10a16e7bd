import { systemClock } from '../retry/clock';
import type { OperationsRuntime } from './runtime';
import { readRow } from './sql/read';
import { poolRunner } from '../transactions/sql';
import type { RecordKey } from './sql/row';

/**
 * Waits until the record may have changed from a live IN_PROGRESS (finalized, lapsed,
 * expired or gone), or until `deadline` (epoch ms). Polls every `pollIntervalMs`. @internal
 */
export async function waitForOwner(
  rt: OperationsRuntime,
  record: RecordKey,
  deadline: number,
  signal: AbortSignal | undefined,
): Promise<void> {
  const { store, pollIntervalMs } = rt.options;
  for (;;) {
    const remaining = deadline - Date.now();
    if (remaining <= 0) return;
    await systemClock.sleep(Math.min(pollIntervalMs, remaining), signal);
    const current = await readRow(poolRunner(store.knex), store.names, record);
    if (
      current === undefined ||
      current.expired ||
      current.row.status !== 'IN_PROGRESS' ||
      !current.leaseLive
    ) {
      return;
    }
  }
}
