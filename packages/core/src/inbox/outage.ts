import { StoreUnavailableError } from '../errors/store-unavailable-error';
import { isStoreOutage } from '../store/outage';
import type { InboxRuntime } from './runtime';
import type { InboxErrorClass } from './types';
import type { MessageKey } from './sql/message-key';
import { refundAttempts } from './sql/refund-attempts';

/** The user's answer for `error`; a classifier that throws answers nothing. @internal */
export function userClass(rt: InboxRuntime, error: unknown): InboxErrorClass | undefined {
  try {
    return rt.options.classify?.(error);
  } catch {
    return undefined;
  }
}

/**
 * Whether a failure belongs to the infrastructure: the user says so, or it bears the store's
 * own signs (see {@link isStoreOutage}). `handler` when it came out of the handler. @internal
 */
export function isInfrastructureFailure(
  rt: InboxRuntime,
  error: unknown,
  handler: boolean,
): boolean {
  return userClass(rt, error) === 'infrastructure' || isStoreOutage(error, { handler });
}

/**
 * Turns an outage into the error `process` throws: the attempts this delivery was charged
 * are given back (best effort: the store may still be down, and then the statement fails
 * within the store's time limits), and a warning and a metric say so. @internal
 */
export async function storeOutage(
  rt: InboxRuntime,
  error: unknown,
  charged: readonly MessageKey[],
): Promise<StoreUnavailableError> {
  const { store, consumer } = rt.options;
  let refunded = charged.length === 0;
  if (!refunded) {
    refunded = await refundAttempts(store.knex, store.names, consumer, charged).then(
      () => true,
      () => false,
    );
  }
  rt.instruments.storeUnavailable(error, charged.length, refunded);
  return error instanceof StoreUnavailableError
    ? error
    : new StoreUnavailableError(error, { consumer, messages: charged.length });
}
