import type { Meter } from '@opentelemetry/api';
import { ConfigurationError } from '../errors/configuration-error';
import { resolveLogger, type Logger } from '../observability/logger';
import { resolveMeter } from '../observability/metrics';
import type { Store } from '../store/store';
import { assertRetentionCoversRedelivery } from './assert-covers-redelivery';
import type { CleanupWindows } from './targets';
import type { RetentionBatch, RetentionOptions } from './types';
import {
  durationOption,
  integerOption,
  optionKeys,
  optionalFunction,
  rejectUnknownOptions,
} from '../config/options';

const DAY_MS = 24 * 60 * 60 * 1000;
const DEFAULT_RETENTION_MS = 7 * DAY_MS;
const DEFAULT_BATCH_SIZE = 1000;
const MAX_BATCH_SIZE = 100_000;
const DEFAULT_MAX_BATCHES = 100;
/** Interval of the background loop when `start` is given none. @internal */
export const DEFAULT_INTERVAL_MS = 60_000;
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

/** {@link RetentionOptions} validated, with every default applied. @internal */
export interface ResolvedRetentionOptions {
  readonly store: Store;
  readonly retentionMs: number;
  /** The windows the cleanup conditions of {@link CLEANUP_TARGETS} are built from. */
  readonly windows: CleanupWindows;
  readonly batchSize: number;
  readonly maxBatchesPerRun: number;
  /** Pause between two batches of one table, and before the next pass when one was cut short. */
  readonly pauseMs: number;
  readonly onBatch: ((batch: RetentionBatch) => void) | undefined;
  readonly logger: Logger;
  readonly meter: Meter;
}

/**
 * Validates retention options and applies defaults; throws a {@link ConfigurationError} (or
 * a `RetentionTooShortError`) for anything that cannot work. @internal
 */
export function resolveRetentionOptions(options: RetentionOptions): ResolvedRetentionOptions {
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
    'batchSize',
    DEFAULT_BATCH_SIZE,
    1,
    MAX_BATCH_SIZE,
  );
  const maxBatchesPerRun = integerOption(
    options.maxBatchesPerRun,
    'maxBatchesPerRun',
    DEFAULT_MAX_BATCHES,
    1,
    Number.MAX_SAFE_INTEGER,
  );
  const pauseMs = durationOption(options.pauseBetweenBatchesMs, 'pauseBetweenBatchesMs', 0, 0);
  const onBatch = optionalFunction<NonNullable<typeof options.onBatch>>(options.onBatch, 'onBatch');
  return {
    store,
    retentionMs,
    windows: { retentionMs, deadLetterRetentionMs },
    batchSize,
    maxBatchesPerRun,
    pauseMs,
    onBatch,
    logger: resolveLogger(options.logger),
    meter: resolveMeter(options.meter, ['createCounter', 'createHistogram']),
  };
}
