/**
 * How an error bears on retrying:
 * - `'transient'` — a blip (connection reset, 500, timeout): retry after the normal backoff;
 * - `'throttling'` — the callee asked for less traffic (429, 503, `ThrottlingException`):
 *   retry, but back off from the larger throttling base delay;
 * - `'non-retriable'` — trying again cannot help (validation, authorization, conflict, bug).
 */
export type ErrorClass = 'transient' | 'throttling' | 'non-retriable';

/** The three {@link ErrorClass} values. */
export const ERROR_CLASSES: readonly ErrorClass[] = Object.freeze([
  'transient',
  'throttling',
  'non-retriable',
]);

/**
 * A caller's own classification rule. Return a class to decide, or `undefined` to let the
 * built-in rules decide.
 */
export type ErrorClassifier = (error: unknown) => ErrorClass | undefined;
