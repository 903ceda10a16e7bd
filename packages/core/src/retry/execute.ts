import type { CircuitBreaker, CircuitPermit } from './circuit-breaker';
import { isTimeoutError } from './classify';
import type { Clock } from './clock';
import type { GiveUpReason, RetryDecision, RetryDecisionInput } from './decide';
import type { ErrorClass } from './error-class';
import { AttemptTimeoutError } from './errors/attempt-timeout-error';
import { RetryAttemptsExhaustedError } from './errors/attempts-exhausted-error';
import { RetryBudgetExhaustedError } from './errors/budget-exhausted-error';
import { CircuitOpenError } from './errors/circuit-open-error';
import { RetryDeadlineExceededError } from './errors/deadline-exceeded-error';
import { RetryQuotaExhaustedError } from './errors/quota-exhausted-error';
import type { ListenerSet } from './listeners';
import type { RetryBudget } from './retry-budget';
import type { RetryQuota } from './retry-quota';
import type { RetrySettings } from './retry-settings';

/** What each attempt of {@link RetryPolicy.execute} receives. */
export interface AttemptContext {
  /** 1-based number of this attempt. */
  readonly attempt: number;
  /**
   * Aborted when this attempt times out (reason: {@link AttemptTimeoutError}), when the total
   * deadline cuts it short, or when the caller's signal aborts (the caller's reason). Pass it
   * to whatever the attempt waits on.
   */
  readonly signal: AbortSignal;
}

/** The work {@link RetryPolicy.execute} runs, once per attempt. */
export type Attempt<T> = (context: AttemptContext) => Promise<T> | T;

/** Options of one {@link RetryPolicy.execute} call. */
export interface ExecuteOptions {
  /** Cancels the whole call: the running attempt's signal aborts and no retry follows. */
  readonly signal?: AbortSignal;
}

/** Reported to {@link RetryPolicy.onRetry} listeners before each backoff sleep. */
export interface RetryEvent {
  /** The attempt that failed. */
  readonly attempt: number;
  /** What it failed with. */
  readonly error: unknown;
  readonly errorClass: Exclude<ErrorClass, 'non-retriable'>;
  /** The sleep before the next attempt. */
  readonly delayMs: number;
  /** Milliseconds since the first attempt started. */
  readonly elapsedMs: number;
}

/** Reported to {@link RetryPolicy.onGiveUp} listeners when a call fails for good. */
export interface GiveUpEvent {
  /** Attempts that ran. */
  readonly attempts: number;
  readonly reason: GiveUpReason;
  /** What `execute` rejects with. */
  readonly error: unknown;
  /** Milliseconds since the first attempt started. */
  readonly elapsedMs: number;
}

/** @internal Everything the executor needs from a policy. */
export interface ExecutorParts {
  readonly settings: RetrySettings;
  readonly clock: Clock;
  readonly classify: (error: unknown) => ErrorClass;
  readonly decide: (input: RetryDecisionInput) => RetryDecision;
  readonly quota: RetryQuota | undefined;
  readonly budget: RetryBudget | undefined;
  readonly breaker: CircuitBreaker | undefined;
  readonly retryListeners: ListenerSet<RetryEvent>;
  readonly giveUpListeners: ListenerSet<GiveUpEvent>;
}

/** What the caller gets when the policy decides not to retry `error`. */
function finalError(
  reason: 'non-retriable' | 'attempts-exhausted' | 'deadline-exceeded',
  settings: RetrySettings,
  attempt: number,
  error: unknown,
  elapsedMs: number,
): unknown {
  switch (reason) {
    case 'non-retriable':
      return error;
    case 'attempts-exhausted':
      return new RetryAttemptsExhaustedError(attempt, error, elapsedMs);
    case 'deadline-exceeded':
      return new RetryDeadlineExceededError(settings.deadlineMs ?? 0, attempt, error, elapsedMs);
  }
}

/** @internal The retry loop behind {@link RetryPolicy.execute}. */
export async function executeWithRetry<T>(
  parts: ExecutorParts,
  fn: Attempt<T>,
  options: ExecuteOptions = {},
): Promise<T> {
  const { settings, clock, quota, budget, breaker } = parts;
  const { signal } = options;
  const start = clock.now();
  const elapsed = (): number => clock.now() - start;
  let lastError: unknown;
  let retryCost: number | undefined;

  /** Reports the final failure to listeners and returns it for the caller to throw. */
  const giveUp = (attempts: number, reason: GiveUpReason, error: unknown): unknown => {
    parts.giveUpListeners.emit({ attempts, reason, error, elapsedMs: elapsed() });
    return error;
  };

  for (let attempt = 1; ; attempt++) {
    if (signal?.aborted) throw giveUp(attempt - 1, 'aborted', signal.reason);

    const remaining =
      settings.deadlineMs === undefined ? Infinity : settings.deadlineMs - elapsed();
    if (remaining <= 0) {
      const error = new RetryDeadlineExceededError(
        settings.deadlineMs ?? 0,
        attempt - 1,
        lastError,
        elapsed(),
      );
      throw giveUp(attempt - 1, 'deadline-exceeded', error);
    }

    let permit: CircuitPermit | undefined;
    if (breaker !== undefined) {
      permit = breaker.tryAcquire();
      if (permit === undefined) {
        if (retryCost !== undefined) quota?.release(retryCost);
        const error = new CircuitOpenError(breaker.retryAfterMs(), attempt - 1, lastError);
        throw giveUp(attempt - 1, 'circuit-open', error);
      }
    }

    const attemptTimeoutMs = settings.attemptTimeoutMs ?? Infinity;
    const cutByDeadline = remaining < attemptTimeoutMs;
    try {
      const value = await runAttempt(
        clock,
        fn,
        attempt,
        signal,
        Math.min(remaining, attemptTimeoutMs),
      );
      permit?.success();
      quota?.recordSuccess(retryCost);
      budget?.recordSuccess();
      return value;
    } catch (error) {
      if (signal?.aborted) {
        permit?.release();
        throw giveUp(attempt, 'aborted', signal.reason);
      }
      lastError = error;
      const errorClass = parts.classify(error);
      // A non-retriable error means the dependency answered and the request was at fault.
      if (errorClass === 'non-retriable') permit?.success();
      else permit?.failure();

      if (cutByDeadline && error instanceof AttemptTimeoutError) {
        const deadline = new RetryDeadlineExceededError(
          settings.deadlineMs ?? 0,
          attempt,
          error,
          elapsed(),
        );
        throw giveUp(attempt, 'deadline-exceeded', deadline);
      }

      const decision = parts.decide({ attempt, error, elapsedMs: elapsed() });
      if (!decision.retry) {
        const final = finalError(decision.reason, settings, attempt, error, elapsed());
        throw giveUp(attempt, decision.reason, final);
      }

      // An open breaker that will still be open after the backoff: refuse now, not after sleeping.
      if (breaker !== undefined && breaker.retryAfterMs() > decision.delayMs) {
        throw giveUp(
          attempt,
          'circuit-open',
          new CircuitOpenError(breaker.retryAfterMs(), attempt, error),
        );
      }

      retryCost = undefined;
      if (quota !== undefined) {
        retryCost = quota.tryAcquire(isTimeoutError(error) ? 'timeout' : 'other');
        if (retryCost === undefined) {
          throw giveUp(
            attempt,
            'quota-exhausted',
            new RetryQuotaExhaustedError(attempt, quota.available, error),
          );
        }
      }
      if (budget !== undefined && !budget.tryWithdraw()) {
        if (retryCost !== undefined) quota?.release(retryCost);
        throw giveUp(attempt, 'budget-exhausted', new RetryBudgetExhaustedError(attempt, error));
      }

      parts.retryListeners.emit({
        attempt,
        error,
        errorClass: decision.errorClass,
        delayMs: decision.delayMs,
        elapsedMs: elapsed(),
      });
      try {
        await clock.sleep(decision.delayMs, signal);
      } catch {
        if (retryCost !== undefined) quota?.release(retryCost);
        throw giveUp(attempt, 'aborted', signal?.reason);
      }
    }
  }
}

/**
 * Runs one attempt: resolves or rejects with `fn`'s outcome, or rejects first with an
 * {@link AttemptTimeoutError} after `timeoutMs`, or with the caller's abort reason. The
 * attempt's signal is aborted in both of the latter cases; `fn` is not awaited any further.
 */
function runAttempt<T>(
  clock: Clock,
  fn: Attempt<T>,
  attempt: number,
  callerSignal: AbortSignal | undefined,
  timeoutMs: number,
): Promise<T> {
  const attemptController = new AbortController();
  const stopTimer = new AbortController();
  let onCallerAbort: (() => void) | undefined;

  const outcome = new Promise<T>((resolve, reject) => {
    onCallerAbort = () => {
      reject(callerSignal?.reason);
      attemptController.abort(callerSignal?.reason);
    };
    callerSignal?.addEventListener('abort', onCallerAbort, { once: true });

    if (Number.isFinite(timeoutMs)) {
      clock.sleep(timeoutMs, stopTimer.signal).then(
        () => {
          const timeout = new AttemptTimeoutError(attempt, timeoutMs);
          reject(timeout);
          attemptController.abort(timeout);
        },
        () => {
          // The timer was stopped because the attempt finished first.
        },
      );
    }

    Promise.resolve()
      .then(() => fn({ attempt, signal: attemptController.signal }))
      .then(resolve, reject);
  });

  return outcome.finally(() => {
    stopTimer.abort();
    if (onCallerAbort !== undefined) callerSignal?.removeEventListener('abort', onCallerAbort);
  });
}
