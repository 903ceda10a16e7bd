import { poolRunner, type SqlRunner } from '../transactions/sql';
import { isLeaseLostError } from './errors/lease-lost-error';
import { extendLease } from './finalize';
import type { LeaseWatch } from './lease-watch';
import type { OperationsRuntime } from './runtime';
import type { OperationContext, OperationRef } from './types';

/**
 * What the effect sees: the record it works on, its signal, and a way to extend the lease.
 * Extensions go through `extendVia`, by default the store: a separate connection, so they
 * commit at once, whatever transaction the effect is in. @internal
 */
export function effectContext(
  rt: OperationsRuntime,
  ref: OperationRef,
  watch: LeaseWatch,
  extendVia: SqlRunner = poolRunner(rt.options.store.knex),
): OperationContext {
  const { controller } = watch;
  return {
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
