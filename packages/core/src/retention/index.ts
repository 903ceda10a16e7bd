export { createRetention } from './create-retention';
export {
  RetentionTooShortError,
  RETENTION_TOO_SHORT,
  isRetentionTooShortError,
} from './errors/retention-too-short-error';
export { assertRetentionCoversRedelivery } from './assert-covers-redelivery';
export type {
  RetentionOptions,
  RetentionTable,
  RetentionBatch,
  TableCleanup,
  RetentionRunResult,
  Retention,
} from './types';
