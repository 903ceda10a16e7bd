export { createRetention } from './retention';
export {
  RetentionTooShortError,
  RETENTION_TOO_SHORT,
  isRetentionTooShortError,
  assertRetentionCoversRedelivery,
} from './retention-too-short-error';
export type {
  RetentionOptions,
  RetentionTable,
  RetentionBatch,
  TableCleanup,
  RetentionRunResult,
  Retention,
} from './types';
