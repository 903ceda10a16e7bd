import { ConfigurationError } from '@justonce/core';
import { positiveIntegerOption } from '@justonce/core/transport';
import { backoffBoundsOption, type BackoffBounds } from '@justonce/core/retry';

/** AMQP short strings (queue and exchange names, routing keys) hold at most 255 bytes. */
export const MAX_NAME_BYTES = 255;

/** Validates a queue or exchange name the consumer declares. @internal */
export function validateName(value: unknown, what: string): string {
  if (typeof value !== 'string' || value === '') {
    throw new ConfigurationError(`${what} must be a non-empty string`, { [what]: value });
  }
  if (Buffer.byteLength(value, 'utf8') > MAX_NAME_BYTES) {
    throw new ConfigurationError(`${what} must be at most ${MAX_NAME_BYTES} bytes`, {
      [what]: value,
    });
  }
  if (value.startsWith('amq.')) {
    throw new ConfigurationError(`${what} cannot start with "amq." (reserved by the broker)`, {
      [what]: value,
    });
  }
  return value;
}

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
