import { fullJitterBackoff } from '../retry/backoff';
import { classifyError } from '../retry/classify';
import type { ErrorClass } from '../retry/error-class';
import { deadLetterMessage } from './dead-letter';
import { nonRetriableReason } from './dead-letter-reason';
import { MaxAttemptsExceededError } from './errors/max-attempts-exceeded-error';
import type { GoodDelivery } from './inspect-envelope';
import { storedError, type InboxRuntime } from './runtime';
import { recordFailure } from './sql/record-failure';
import { retryOutcome } from './retry-outcome';
import { isRetryBudgetSpentError } from './errors/retry-budget-spent-error';
import type { InboxOutcome } from './types';
import { isInfrastructureFailure, storeOutage, userClass } from './outage';

/**
 * How a handler error bears on retrying, by the retry module's rules (the inbox's `classify`
 * option first, then marks, a justonce error's `retriable` flag — so {@link FinalError} is
 * final —, SDK traits, error names and codes, SQLSTATEs, HTTP statuses). @internal
 */
export function classifyHandlerError(rt: InboxRuntime, error: unknown): ErrorClass {
  const own = userClass(rt, error);
  return classifyError(error, {
    classify: () => (own === 'infrastructure' ? undefined : own),
  });
}

/** Smallest backoff base after a throttling error, as the retry policy's default. */
const THROTTLING_BASE_MS = 500;

/**
 * Decides what a failed attempt leads to, after its transaction rolled back: a fault of the
 * infrastructure (the store's, or one the `classify` option names) → the attempt is given
 * back and {@link StoreUnavailableError} thrown, so the transport neither acknowledges nor
 * dead-letters; a non-retriable error (reason `NON_RETRIABLE`, or the one the error names, see
 * {@link nonRetriableReason}) or the last allowed attempt → dead letter; otherwise
 * the error is recorded on the attempt counter (autocommit) and the transport is told to
 * redeliver after a full-jitter delay. `charged` when this delivery counted its attempt.
 * @internal
 */
export async function settleFailure(
  rt: InboxRuntime,
  good: GoodDelivery,
  attempt: number,
  error: Error,
  charged: boolean,
): Promise<InboxOutcome<never>> {
  // The budget's dead-letter (resilience `whenSpent`) never turns an outage into a letter.
  const own = isRetryBudgetSpentError(error) ? error.cause : error;
  if (isInfrastructureFailure(rt, own, true)) {
    throw await storeOutage(rt, own, charged ? [good] : []);
  }
  const { store, consumer, maxAttempts, backoff } = rt.options;
  const errorClass = classifyHandlerError(rt, error);
  if (errorClass === 'non-retriable') {
    // A typed message's bad payload or unknown type says so in the letter's reason.
    const reason = nonRetriableReason(error);
    return deadLetterMessage(rt, good, reason, attempt, () => error);
  }
  if (attempt >= maxAttempts) {
    return deadLetterMessage(
      rt,
      good,
      'MAX_ATTEMPTS',
      attempt,
      () => new MaxAttemptsExceededError(attempt, maxAttempts, error),
    );
  }
  await recordFailure(store.knex, store.names, consumer, good, storedError(error));
  const base =
    errorClass === 'throttling'
      ? { ...backoff, baseMs: Math.max(backoff.baseMs ?? 100, THROTTLING_BASE_MS) }
      : backoff;
  return retryOutcome(good, attempt, error, fullJitterBackoff(attempt, base));
}
