import { OnceUnavailableError } from '../errors/once-unavailable-error';
import type { Store } from '../../store/store';
import type { OperationsRuntime } from '../runtime';
import type { OnceParent } from './key';
import { runOnce, type OnceSettings } from './run-once';
import type { Once } from './types';

/**
 * `ctx.once` for one handler run: steps recorded under `parent` in the ledger `rt`, or, when
 * there is no usable ledger (`rt` is a reason), a `once` that rejects with
 * {@link OnceUnavailableError} before running anything. @internal
 */
export function bindOnce(
  rt: OperationsRuntime | { readonly unavailable: string },
  parent: OnceParent,
  settings: OnceSettings,
): Once {
  if ('unavailable' in rt) {
    const reason = rt.unavailable;
    return async () => {
      throw new OnceUnavailableError(reason, { namespace: parent.namespace });
    };
  }
  return (step, fn, options) => runOnce(rt, parent, settings, { step, fn, options });
}

/**
 * Why `ctx.once` cannot use `ledger` while a transaction on `handlerStore` is open, if it
 * cannot: PGlite has one connection, which that transaction holds, so a record written
 * beside it would wait for it until the pool's acquire timeout. @internal
 */
export function ledgerConflict(
  ledger: OperationsRuntime,
  handlerStore: Store,
): { readonly unavailable: string } | undefined {
  const { store } = ledger.options;
  if (store.dialect !== 'pglite' || handlerStore.dialect !== 'pglite') return undefined;
  // Two stores on one PGlite instance share its one session as well.
  const shared =
    store.knex === handlerStore.knex ||
    (store.pglite !== undefined && store.pglite === handlerStore.pglite);
  if (!shared) return undefined;
  return {
    unavailable:
      "the ledger's store is the PGlite the handler's transaction holds (its only connection); give the ledger a store of its own",
  };
}
