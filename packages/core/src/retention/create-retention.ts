import { ConfigurationError } from '../errors/configuration-error';
import { silentLogger } from '../observability/logger';
import { resolveMeter } from '../observability/metrics';
import { assertRetentionCoversRedelivery } from './retention-too-short-error';
import { deleteBatch } from './sql/delete-batch';
import { tableExists } from './sql/table-exists';
import { CLEANUP_TARGETS, type CleanupWindows } from './targets';
import type {
  Retention,
  RetentionOptions,
  RetentionRunResult,
  RetentionTable,
  TableCleanup,
} from './types';
import {
  durationOption,
  integerOption,
  optionKeys,
  optionalFunction,
  rejectUnknownOptions,
} from '../config/options';
import { systemClock } from '../retry/clock';

const DAY_MS = 24 * 60 * 60 * 1000;
const DEFAULT_RETENTION_MS = 7 * DAY_MS;
const DEFAULT_BATCH_SIZE = 1000;
const MAX_BATCH_SIZE = 100_000;
const DEFAULT_MAX_BATCHES = 100;
const DEFAULT_INTERVAL_MS = 60_000;
const RETENTION_KEYS = optionKeys<RetentionOptions>()([
  'store',
  'retentionMs',
  'redeliveryHorizonMs',
  'deadLetterRetentionMs',
  'batchSize',
  'maxBatchesPerRun',
  'pauseBetweenBatchesMs',
  'onBatch',
  'logger',
  'meter',
]);

/**
 * The retention job (DESIGN guarantee 4): deletes dedup records once they are past their
 * `expires_at` and older than the retention window, stale inbox attempt counters, and (opt
 * in) old dead letters. Each batch is one short `DELETE` over rows picked with
 * `FOR UPDATE SKIP LOCKED`, so the job never waits for a writer and a writer never waits
 * for more than one batch. A window shorter than the transport's redelivery horizon is
 * refused at construction with {@link RetentionTooShortError}.
 *
 * ```ts
 * const retention = createRetention({ store, retentionMs: 7 * DAY, redeliveryHorizonMs: 4 * DAY });
 * retention.start(60_000);
 * // on shutdown
 * await retention.stop();
 * ```
 */
export function createRetention(options: RetentionOptions): Retention {
  if (options === null || typeof options !== 'object') {
    throw new ConfigurationError('createRetention needs an options object');
  }
  rejectUnknownOptions(options, RETENTION_KEYS, 'createRetention');
  const { store } = options;
  if (store === undefined || store === null || typeof store.knex !== 'function') {
    throw new ConfigurationError('createRetention needs a store (see createStore)');
  }
  const retentionMs = durationOption(options.retentionMs, 'retentionMs', DEFAULT_RETENTION_MS, 1);
  const redeliveryHorizonMs =
    options.redeliveryHorizonMs === undefined
      ? undefined
      : durationOption(options.redeliveryHorizonMs, 'redeliveryHorizonMs', 0, 0);
  assertRetentionCoversRedelivery(retentionMs, redeliveryHorizonMs);
  const deadLetterRetentionMs =
    options.deadLetterRetentionMs === undefined
      ? undefined
      : durationOption(options.deadLetterRetentionMs, 'deadLetterRetentionMs', 0, 1);
  const batchSize = integerOption(
    options.batchSize,
    DEFAULT_BATCH_SIZE,
    'batchSize',
    1,
    MAX_BATCH_SIZE,
  );
  const maxBatchesPerRun = integerOption(
    options.maxBatchesPerRun,
    DEFAULT_MAX_BATCHES,
    'maxBatchesPerRun',
    1,
    Number.MAX_SAFE_INTEGER,
  );
  const pauseMs = durationOption(options.pauseBetweenBatchesMs, 'pauseBetweenBatchesMs', 0, 0);
  const onBatch = optionalFunction<NonNullable<typeof options.onBatch>>(options.onBatch, 'onBatch');
  const logger = options.logger ?? silentLogger;
  const meter = resolveMeter(options.meter);
  const deletedCounter = meter.createCounter('justonce.retention.deleted', {
    description: 'Rows deleted by the retention job, by table',
  });
  const batchDuration = meter.createHistogram('justonce.retention.batch.duration', {
    description: 'Time one retention batch statement took',
    unit: 'ms',
  });
  const windows: CleanupWindows = { retentionMs, deadLetterRetentionMs };
  const { knex, names } = store;

  async function cleanTable(
    target: (typeof CLEANUP_TARGETS)[number],
    signal: AbortSignal | undefined,
  ): Promise<TableCleanup> {
    const condition = target.condition(windows);
    if (condition === undefined) {
      return { deleted: 0, batches: 0, complete: true, skipped: 'disabled' };
    }
    const table = names.table(target.table);
    if (!(await tableExists(knex, table))) {
      return { deleted: 0, batches: 0, complete: true, skipped: 'missing' };
    }
    let deleted = 0;
    let batches = 0;
    while (batches < maxBatchesPerRun) {
      if (signal?.aborted) break;
      if (batches > 0 && pauseMs > 0) await systemClock.sleep(pauseMs);
      const started = performance.now();
      const gone = await deleteBatch(knex, table, condition.sql, condition.bindings, batchSize);
      const durationMs = performance.now() - started;
      batches += 1;
      deleted += gone;
      batchDuration.record(durationMs, { table: target.table });
      if (gone > 0) deletedCounter.add(gone, { table: target.table });
      onBatch?.({ table: target.table, deleted: gone, durationMs });
      if (gone < batchSize) return { deleted, batches, complete: true };
    }
    return { deleted, batches, complete: false };
  }

  async function runOnce(
    runOptions: { readonly signal?: AbortSignal } = {},
  ): Promise<RetentionRunResult> {
    const tables = {} as Record<RetentionTable, TableCleanup>;
    let deleted = 0;
    let complete = true;
    for (const target of CLEANUP_TARGETS) {
      const result = runOptions.signal?.aborted
        ? { deleted: 0, batches: 0, complete: false }
        : await cleanTable(target, runOptions.signal);
      tables[target.table] = result;
      deleted += result.deleted;
      complete &&= result.complete;
    }
    if (deleted > 0 || !complete) {
      logger.info('retention pass finished', {
        deleted,
        complete,
        ...Object.fromEntries(
          Object.entries(tables).map(([table, result]) => [table, result.deleted]),
        ),
      });
    }
    return { tables, deleted, complete };
  }

  let loop: LoopState | undefined = undefined;

  return {
    retentionMs,
    runOnce,

    start(intervalMs = DEFAULT_INTERVAL_MS) {
      const every = durationOption(intervalMs, 'intervalMs', DEFAULT_INTERVAL_MS, 1);
      if (loop !== undefined) return;
      const state: LoopState = {
        controller: new AbortController(),
        timer: undefined,
        current: undefined,
      };
      loop = state;
      const schedule = (delayMs: number): void => {
        if (state.controller.signal.aborted) return;
        state.timer = setTimeout(tick, delayMs);
        state.timer.unref?.();
      };
      const tick = (): void => {
        state.timer = undefined;
        state.current = runOnce({ signal: state.controller.signal }).then(
          (result) => schedule(result.complete ? every : pauseMs),
          (error: unknown) => {
            logger.error('retention pass failed; trying again at the next interval', {
              error: error instanceof Error ? error.message : String(error),
            });
            schedule(every);
          },
        );
      };
      schedule(0);
    },

    async stop() {
      const state = loop;
      if (state === undefined) return;
      loop = undefined;
      state.controller.abort();
      if (state.timer !== undefined) clearTimeout(state.timer);
      await state.current;
    },
  };
}

/** The background loop's state while it is started. */
interface LoopState {
  readonly controller: AbortController;
  timer: ReturnType<typeof setTimeout> | undefined;
  current: Promise<void> | undefined;
}
