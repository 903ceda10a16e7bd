import { hasErrorCode } from '@justonce/core';

/** Longest wait between two tries of a message held through a store outage. @internal */
export const STORE_OUTAGE_BACKOFF_CAP_MS = 10_000;

/**
 * True when the inbox says the store (or a dependency its `classify` option calls
 * `'infrastructure'`) is down: a `StoreUnavailableError`, or any error with code
 * `STORE_UNAVAILABLE` (an inbox of your own may throw its own). Not the message's fault.
 * @internal
 */
export function isStoreUnavailable(error: unknown): boolean {
  if (hasErrorCode(error, 'STORE_UNAVAILABLE')) return true;
  return (
    typeof error === 'object' &&
    error !== null &&
    (error as { code?: unknown }).code === 'STORE_UNAVAILABLE'
  );
}
