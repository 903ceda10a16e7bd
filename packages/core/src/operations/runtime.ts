import { createCoalescer, type Coalescer } from '../store/coalesce';
import { poolRunner } from '../transactions/sql';
import type { ResolvedOperationsOptions } from './options';
import { finalizeRow, finalizeRows, type Finalize } from './sql/finalize';
import { reserveRow, reserveRows, type Reserve, type ReservedRow } from './sql/reserve';
import type { RecordKey } from './sql/row';

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
  /** Reservations, grouped into one statement when several are made at once. */
  readonly reserve: Coalescer<Reserve, ReservedRow | undefined>;
  /**
   * Final states written on the store's pool (not in a business transaction), grouped the
   * same way; each resolves to whether its compare-and-set matched.
   */
  readonly finalize: Coalescer<Finalize, boolean>;
}

/** A record's identity as one string; NUL cannot occur in PostgreSQL text. */
function recordKey(record: RecordKey): string {
  return `${record.scope}\u0000${record.operation}\u0000${record.key}`;
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
  const { store } = options;
  const pool = poolRunner(store.knex);
  return {
    options,
    reserve: createCoalescer<Reserve, ReservedRow | undefined>({
      one: (item) => reserveRow(store.knex, store, item),
      many: (items) => reserveRows(store.knex, store, items),
      key: recordKey,
    }),
    finalize: createCoalescer<Finalize, boolean>({
      one: (item) => finalizeRow(pool, store, item, item.ownerId, item.final, item.retentionMs),
      many: (items) => finalizeRows(store.knex, store, items),
      key: recordKey,
    }),
    count: (operation, outcome) => outcomes.add(1, { operation, outcome }),
    effectDuration: (operation, ms) => effectDuration.record(ms, { operation }),
  };
}

/** The runtime behind each `Operations` that `createOperations` made. */
const runtimes = new WeakMap<object, OperationsRuntime>();

/** Remembers that `operations` runs on `rt`, for {@link operationsRuntimeOf}. @internal */
export function registerOperationsRuntime<T extends object>(
  rt: OperationsRuntime,
  operations: T,
): T {
  runtimes.set(operations, rt);
  return operations;
}

/**
 * The runtime of an `Operations` that `createOperations` made (an inbox's `ledger` uses its
 * store and settings); `undefined` for any other value. @internal
 */
export function operationsRuntimeOf(operations: unknown): OperationsRuntime | undefined {
  return typeof operations === 'object' && operations !== null
    ? runtimes.get(operations)
    : undefined;
}
