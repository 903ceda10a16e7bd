import { finishesWithin } from '../common/time';
import { StoreUnavailableError } from '../errors/store-unavailable-error';
import { isCircuitOpenError, type CircuitOpenError } from '../retry/errors/circuit-open-error';
import { isStoreOutage, isTransactionConflict } from '../store/outage';
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
 * Whether a failure belongs to the infrastructure: the user says so, it bears the store's own
 * signs (see {@link isStoreOutage}), it is a collision of the inbox's own statements with
 * other transactions, or a circuit breaker opened on it (a consumer's `resilience` option).
 * `handler` when it came out of the handler. @internal
 */
export function isInfrastructureFailure(
  rt: InboxRuntime,
  error: unknown,
  handler: boolean,
): boolean {
  return (
    userClass(rt, error) === 'infrastructure' ||
    isCircuitOpenError(error) ||
    isStoreOutage(error, { handler }) ||
    // A deadlock or serialization failure of the inbox's own statements (the claim, the
    // commit) is no fault of the message; a handler's own stays its failure, so that a
    // handler that deadlocks every time still runs out of attempts.
    (!handler && isTransactionConflict(error))
  );
}

/**
 * How long an outage's report waits for the refund of its attempts. The refund meets the same
 * outage, and only the store's time limits would end it (about as long again as the statement
 * that failed), so past this wait it goes on unawaited and the outage is reported at once.
 */
const REFUND_WAIT_MS = 1_000;

/**
 * Turns an outage into the error `process` throws: the attempts this delivery was charged
 * are given back (best effort: the store may still be down; the report waits for the refund
 * at most {@link REFUND_WAIT_MS}, and a refund still pending then goes on unawaited), and a
 * warning and a metric say so. @internal
 */
export async function storeOutage(
  rt: InboxRuntime,
  error: unknown,
  charged: readonly MessageKey[],
): Promise<StoreUnavailableError | CircuitOpenError> {
  const { store, consumer } = rt.options;
  let refunded = charged.length === 0;
  if (!refunded) {
    const succeeded = refundAttempts(store.knex, store.names, consumer, charged).then(
      () => true,
      () => false,
    );
    refunded = (await finishesWithin(succeeded, REFUND_WAIT_MS)) && (await succeeded);
  }
  // An open breaker is reported by the resilience layer; the store is fine.
  if (isCircuitOpenError(error)) return error;
  rt.instruments.storeUnavailable(error, charged.length, refunded);
  return error instanceof StoreUnavailableError
    ? error
    : new StoreUnavailableError(error, { consumer, messages: charged.length });
}
