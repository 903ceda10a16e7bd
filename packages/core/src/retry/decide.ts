import { fullJitterBackoff } from './backoff';
import type { ErrorClass } from './error-class';
import type { RetrySettings } from './retry-settings';

/** What {@link RetryPolicy.decide} needs to know about a failed attempt. */
export interface RetryDecisionInput {
  /** The 1-based attempt that just failed (for a redelivered message: its delivery count). */
  readonly attempt: number;
  /** What the attempt failed with. */
  readonly error: unknown;
  /** Milliseconds since the first attempt started; needed to honour `deadlineMs`. */
  readonly elapsedMs?: number;
}

/** Why a policy stopped retrying. */
export type GiveUpReason =
  | 'non-retriable'
  | 'attempts-exhausted'
  | 'deadline-exceeded'
  | 'quota-exhausted'
  | 'budget-exhausted'
  | 'circuit-open'
  | 'aborted';

/** The reasons the pure {@link RetryPolicy.decide} can give; the others come from shared state. */
export type DecisionGiveUpReason = Extract<
  GiveUpReason,
  'non-retriable' | 'attempts-exhausted' | 'deadline-exceeded'
>;

/** Answer of {@link RetryPolicy.decide}. */
export type RetryDecision =
  | {
      readonly retry: true;
      /** Wait this long before the next attempt. */
      readonly delayMs: number;
      readonly errorClass: Exclude<ErrorClass, 'non-retriable'>;
    }
  | {
      readonly retry: false;
      readonly reason: DecisionGiveUpReason;
      readonly errorClass: ErrorClass;
    };

/** @internal Backoff ceiling-then-jitter for the delay after `attempt` fails. */
export function computeBackoff(
  settings: RetrySettings,
  random: () => number,
  attempt: number,
  errorClass: Exclude<ErrorClass, 'non-retriable'>,
): number {
  const baseMs =
    errorClass === 'throttling' ? settings.throttlingBaseDelayMs : settings.baseDelayMs;
  const capMs = settings.maxDelayMs;
  return fullJitterBackoff(normaliseAttempt(attempt), {
    baseMs,
    capMs,
    random: settings.dangerouslyDisableJitter ? () => 1 : random,
  });
}

/** @internal The pure decision: classification, attempt limit, deadline, delay. */
export function decideRetry(
  settings: RetrySettings,
  random: () => number,
  errorClass: ErrorClass,
  input: RetryDecisionInput,
): RetryDecision {
  if (errorClass === 'non-retriable') {
    return { retry: false, reason: 'non-retriable', errorClass };
  }
  const attempt = normaliseAttempt(input.attempt);
  if (attempt >= settings.maxAttempts) {
    return { retry: false, reason: 'attempts-exhausted', errorClass };
  }
  const delayMs = computeBackoff(settings, random, attempt, errorClass);
  const { deadlineMs } = settings;
  if (
    deadlineMs !== undefined &&
    input.elapsedMs !== undefined &&
    input.elapsedMs + delayMs >= deadlineMs
  ) {
    return { retry: false, reason: 'deadline-exceeded', errorClass };
  }
  return { retry: true, delayMs, errorClass };
}

/** Attempts below 1 or not numbers count as the first attempt; fractions round down. */
function normaliseAttempt(attempt: number): number {
  return attempt >= 1 ? Math.floor(attempt) : 1;
}
