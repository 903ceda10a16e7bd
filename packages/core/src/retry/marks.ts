import type { ErrorClass } from './error-class';

const MARK = Symbol.for('@justonce/core/retry-class');

/**
 * Marks `error` as worth retrying, as `'transient'` (default) or `'throttling'` (backs off from
 * the larger throttling base delay). The mark beats every built-in rule but a policy's own
 * `classify` function. Returns the same error so it can be thrown inline:
 * `throw markRetriable(new Error('lock busy'))`.
 */
export function markRetriable<E extends object>(
  error: E,
  errorClass: 'transient' | 'throttling' = 'transient',
): E {
  return setMark(error, errorClass);
}

/** Marks `error` as throttling: the callee asked us to slow down. Same as `markRetriable(error, 'throttling')`. */
export function markThrottling<E extends object>(error: E): E {
  return setMark(error, 'throttling');
}

/**
 * Marks `error` as not worth retrying (a validation failure, a conflict, a bug): the policy
 * gives up at once and rethrows it unchanged. Returns the same error.
 */
export function markNonRetriable<E extends object>(error: E): E {
  return setMark(error, 'non-retriable');
}

/** The class set by {@link markRetriable}, {@link markThrottling} or {@link markNonRetriable}, if any. */
export function readRetryMark(error: unknown): ErrorClass | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const mark = (error as Record<symbol, unknown>)[MARK];
  return mark === 'transient' || mark === 'throttling' || mark === 'non-retriable'
    ? mark
    : undefined;
}

function setMark<E extends object>(error: E, errorClass: ErrorClass): E {
  // Non-enumerable, so the mark does not leak into logged or serialized errors; the symbol
  // is registered globally, so two copies of this package read each other's marks.
  Object.defineProperty(error, MARK, {
    value: errorClass,
    enumerable: false,
    configurable: true,
    writable: true,
  });
  return error;
}
