import { fullJitterBackoff } from '../retry/backoff';
import { classifyError } from '../retry/classify';
import type { ErrorClass } from '../retry/error-class';
import { deadLetterMessage } from './dead-letter';
import { MaxAttemptsExceededError } from './errors/max-attempts-exceeded-error';
import type { GoodDelivery } from './inspect-envelope';
import { storedError, type InboxRuntime } from './runtime';
import { recordFailure } from './sql/record-failure';
import type { InboxOutcome } from './types';

/**
 * How a handler error bears on retrying, by the retry module's rules (the inbox's `classify`
 * option first, then marks, a justonce error's `retriable` flag — so {@link FinalError} is
 * final —, SDK traits, error names and codes, SQLSTATEs, HTTP statuses). @internal
 */
export function classifyHandlerError(rt: InboxRuntime, error: unknown): ErrorClass {
  return classifyError(error, { classify: rt.options.classify });
}

/** Smallest backoff base after a throttling error, as the retry policy's default. */
const THROTTLING_BASE_MS = 500;

/**
 * Decides what a failed attempt leads to, after its transaction rolled back: a
 * non-retryable error or the last allowed attempt → dead letter; otherwise the error is recorded on the attempt
 * counter (autocommit) and the transport is told to redeliver after a full-jitter delay.
 * @internal
 */
export async function settleFailure(
  rt: InboxRuntime,
  good: GoodDelivery,
  attempt: number,
  error: Error,
): Promise<InboxOutcome<never>> {
  const { store, consumer, maxAttempts, backoff } = rt.options;
  const errorClass = classifyHandlerError(rt, error);
  if (errorClass === 'non-retryable') {
    return deadLetterMessage(rt, good, 'NON_RETRIABLE', attempt, () => error);
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
  return {
    status: 'failed',
    messageId: good.messageId,
    scope: good.scope,
    attempt,
    retriable: true,
    error,
    retryDelayMs: fullJitterBackoff(
      attempt,
      errorClass === 'throttling'
        ? { ...backoff, baseMs: Math.max(backoff.baseMs ?? 100, THROTTLING_BASE_MS) }
        : backoff,
    ),
  };
}
