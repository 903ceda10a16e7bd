/** Marker that survives two copies of the package being loaded. */
const USAGE = Symbol.for('justonce.cli.usage-error');

/**
 * A command line that cannot run as given (a missing database URL, a malformed id or
 * date): reported on stderr with exit code 2, before anything is read or changed.
 */
export class UsageError extends Error {
  readonly [USAGE] = true;
  override readonly name = 'UsageError';
}

/** Whether `error` is a {@link UsageError} (checks the marker, not `instanceof`). */
export function isUsageError(error: unknown): error is UsageError {
  return (
    typeof error === 'object' &&
    error !== null &&
    (error as Record<symbol, unknown>)[USAGE] === true
  );
}
