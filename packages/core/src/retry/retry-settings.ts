import type { ErrorClass } from './error-class';

/** The numeric settings of a retry policy after defaults are applied. */
export interface RetrySettings {
  /** Attempts in total, the first included. */
  readonly maxAttempts: number;
  /** Backoff base for transient errors, in milliseconds. */
  readonly baseDelayMs: number;
  /** Backoff base for throttling errors, in milliseconds. */
  readonly throttlingBaseDelayMs: number;
  /** Largest backoff ceiling, in milliseconds. */
  readonly maxDelayMs: number;
  /** Total time allowed from the first attempt, in milliseconds; `undefined` for none. */
  readonly deadlineMs: number | undefined;
  /** Time allowed for one attempt, in milliseconds; `undefined` for none. */
  readonly attemptTimeoutMs: number | undefined;
  /** Class of errors no rule recognises. */
  readonly defaultErrorClass: ErrorClass;
  /** When true, every delay is its full ceiling instead of a random fraction of it. */
  readonly dangerouslyDisableJitter: boolean;
}

/** Defaults of {@link retryPolicy}: standard-mode numbers from seed 003's SDK family. */
export const RETRY_POLICY_DEFAULTS = Object.freeze({
  maxAttempts: 3,
  baseDelayMs: 100,
  throttlingBaseDelayMs: 500,
  maxDelayMs: 20_000,
  defaultErrorClass: 'transient' as ErrorClass,
});
