import type { ResolvedOperationsOptions } from './options';

/** Outcomes counted by the `justonce.operations.outcomes` counter. @internal */
export type Outcome =
  | 'executed'
  | 'replayed'
  | 'failure_replayed'
  | 'effect_failed'
  | 'conflict'
  | 'in_progress'
  | 'lease_lost';

/** What the functions of one `createOperations` instance share. @internal */
export interface OperationsRuntime {
  readonly options: ResolvedOperationsOptions;
  /** Counts one call of `operation` under `outcome`. */
  count(operation: string, outcome: Outcome): void;
  /** Records how long one run of an effect took, in milliseconds. */
  effectDuration(operation: string, ms: number): void;
}

/** Creates the runtime record, with its instruments, around resolved options. @internal */
export function createOperationsRuntime(options: ResolvedOperationsOptions): OperationsRuntime {
  const outcomes = options.meter.createCounter('justonce.operations.outcomes', {
    description: 'Calls of idempotent operations, by outcome',
  });
  const effectDuration = options.meter.createHistogram('justonce.operations.effect.duration', {
    description: 'Time the effect of an idempotent operation took',
    unit: 'ms',
  });
  return {
    options,
    count: (operation, outcome) => outcomes.add(1, { operation, outcome }),
    effectDuration: (operation, ms) => effectDuration.record(ms, { operation }),
  };
}
