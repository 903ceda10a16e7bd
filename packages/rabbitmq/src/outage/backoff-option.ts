import { positiveIntegerOption } from '@justonce/core/transport';
import { backoffBoundsOption, type BackoffBounds } from '@justonce/core/retry';

/**
 * A `reconnect` or `storeRetry` backoff (`what`), checked with core's backoff check, `defaults`
 * standing in for a bound not given. Each bound is at least 1 ms: with a base of 0 a full-jitter
 * backoff is always 0, a reconnect or retry loop without pause. @internal
 */
export function backoffOption(
  value: { readonly baseMs?: unknown; readonly capMs?: unknown } | undefined,
  what: string,
  defaults: BackoffBounds,
): BackoffBounds {
  const baseMs = positiveIntegerOption(value?.baseMs, `${what}.baseMs`, defaults.baseMs);
  const capMs = positiveIntegerOption(value?.capMs, `${what}.capMs`, defaults.capMs);
  return backoffBoundsOption({ baseMs, capMs }, defaults, undefined, what);
}
