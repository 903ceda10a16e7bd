import { integerOption } from '../config/options';
import { ConfigurationError } from '../errors/configuration-error';

/** Options of {@link fullJitterBackoff}. */
export interface BackoffOptions {
  /** First delay ceiling in milliseconds. Default 100. */
  readonly baseMs?: number;
  /** Largest delay ceiling in milliseconds. Default 20 000 (the SDKs' MAX_BACKOFF). */
  readonly capMs?: number;
  /** Source of randomness in [0, 1); injectable for tests. Default `Math.random`. */
  readonly random?: () => number;
}

/** What {@link fullJitterBackoff} uses for a `baseMs` or `capMs` not given. @internal */
export const BACKOFF_DEFAULTS: BackoffBounds = { baseMs: 100, capMs: 20_000 };

/**
 * Exponential backoff with full jitter: a uniformly random delay in
 * `[0, min(cap, base * 2^(attempt-1)))`. Full jitter spreads retrying clients apart so they
 * do not come back in lockstep. `attempt` is 1-based: the delay before the second try is
 * `fullJitterBackoff(1)`.
 */
export function fullJitterBackoff(attempt: number, options: BackoffOptions = {}): number {
  const base = options.baseMs ?? BACKOFF_DEFAULTS.baseMs;
  const cap = options.capMs ?? BACKOFF_DEFAULTS.capMs;
  const random = options.random ?? Math.random;
  const exponent = Math.max(0, Math.floor(attempt) - 1);
  // 2^exponent overflows to Infinity for large attempts; min() with cap keeps it finite.
  const ceiling = Math.min(cap, base * 2 ** exponent);
  return Math.floor(ceiling * random());
}

/** The `baseMs` / `capMs` pair of a backoff option, resolved. @internal */
export interface BackoffBounds {
  readonly baseMs: number;
  readonly capMs: number;
}

/**
 * Checks the `baseMs` and `capMs` of a `backoff` option: integers from 0 to the `max` of each,
 * with `defaults` standing in for one not given, and the cap not below the base (a cap that
 * small would silently override the base). Every problem is a {@link ConfigurationError}.
 * For transports' backoff options too, so that each checks them alike; `name` is the
 * option's name in the messages.
 */
export function backoffBoundsOption(
  backoff: { readonly baseMs?: unknown; readonly capMs?: unknown } | undefined,
  defaults: BackoffBounds,
  max: BackoffBounds = { baseMs: Number.MAX_SAFE_INTEGER, capMs: Number.MAX_SAFE_INTEGER },
  name = 'backoff',
): BackoffBounds {
  const baseMs = integerOption(backoff?.baseMs, `${name}.baseMs`, defaults.baseMs, 0, max.baseMs);
  const capMs = integerOption(backoff?.capMs, `${name}.capMs`, defaults.capMs, 0, max.capMs);
  if (capMs < baseMs) {
    throw new ConfigurationError(`${name}.capMs must not be below ${name}.baseMs`, {
      baseMs,
      capMs,
    });
  }
  return { baseMs, capMs };
}
