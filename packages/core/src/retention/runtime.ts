import type { Counter, Histogram } from '@opentelemetry/api';
import type { ResolvedRetentionOptions } from './options';

/** What the functions of one retention job share. @internal */
export interface RetentionRuntime {
  readonly options: ResolvedRetentionOptions;
  /** `justonce.retention.deleted`: rows deleted, by table. */
  readonly deleted: Counter;
  /** `justonce.retention.batch.duration`: time of one batch statement, in ms. */
  readonly batchDuration: Histogram;
}

/** Creates the instruments of one retention job around its resolved options. @internal */
export function createRetentionRuntime(options: ResolvedRetentionOptions): RetentionRuntime {
  return {
    options,
    deleted: options.meter.createCounter('justonce.retention.deleted', {
      description: 'Rows deleted by the retention job, by table',
    }),
    batchDuration: options.meter.createHistogram('justonce.retention.batch.duration', {
      description: 'Time one retention batch statement took',
      unit: 'ms',
    }),
  };
}
