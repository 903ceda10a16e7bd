import { poolRunner, type SqlRunner } from '../transactions/sql';
import { isLeaseLostError } from './errors/lease-lost-error';
import { extendLease } from './finalize';
import type { LeaseWatch } from './lease-watch';
import { bindOnce } from './once/bind';
import type { OperationsRuntime } from './runtime';
import type { OperationContext, OperationRef } from './types';

/**
 * What the effect sees: the record it works on, its signal, and a way to extend the lease.
 * Extensions go through `extendVia`, by default the store: a separate connection, so they
 * commit at once, whatever transaction the effect is in. `ctx.once` records in `ledger`, or
 * rejects with its reason when it has none. @internal
 */
export function effectContext(
  rt: OperationsRuntime,
  ref: OperationRef,
  watch: LeaseWatch,
  extendVia: SqlRunner = poolRunner(rt.options.store.knex),
  ledger: OperationsRuntime | { readonly unavailable: string } = rt,
): OperationContext {
  const { controller } = watch;
  return {
    // Steps of this execution are recorded under its own record, on the same store.
    once: bindOnce(
      ledger,
      { kind: 'operation', namespace: ref.operation, scope: ref.scope, id: ref.key },
      { retentionMs: ref.retentionMs, signal: controller.signal },
    ),
    key: ref.key,
    scope: ref.scope,
    operation: ref.operation,
    ownerId: ref.ownerId,
    attempt: ref.attempt,
    signal: controller.signal,
    extendLease: async (ms?: number) => {
      let extended: { leaseUntil: Date; dbNow: Date };
      try {
        extended = await extendLease(rt, ref, ms, extendVia);
      } catch (error) {
        if (isLeaseLostError(error)) controller.abort(error);
        throw error;
      }
      if (!controller.signal.aborted) {
        watch.rearm(extended.leaseUntil.getTime() - extended.dbNow.getTime());
      }
      return extended.leaseUntil;
    },
  };
}
