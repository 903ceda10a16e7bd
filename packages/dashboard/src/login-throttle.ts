import type { Ctx, Deps } from './context';
import { errorPage } from './error-page';

/** Wrong tokens in a row that are answered at once. */
const FREE_FAILURES = 5;
/** The first lockout; each further wrong token doubles it, up to {@link MAX_LOCK_MS}. */
const FIRST_LOCK_MS = 1_000;
const MAX_LOCK_MS = 60_000;

/**
 * Slows the guessing of the operator token. After {@link FREE_FAILURES} wrong tokens in a row
 * (on the login form or in a Bearer header), the dashboard checks no token at all for a
 * lockout of 1 s, doubled by each further wrong token up to a minute; a right token after a
 * lockout ends the count.
 *
 * One count per dashboard, not per client: behind a proxy, a Fetch handler cannot tell one
 * client from another, and a count per address a client chooses itself would throttle
 * nothing. The price is that someone who keeps sending wrong tokens keeps operators out of
 * logging in (an open session, the CLI and reading are not affected); the token's length
 * (16 characters or more) is what makes guessing hopeless, this only makes it slower still.
 */
export class LoginThrottle {
  private failures = 0;
  private lockedUntil = 0;

  constructor(private readonly now: () => number = Date.now) {}

  /** How long until a token is checked again, in ms; 0 when it is checked now. */
  waitMs(): number {
    return Math.max(0, this.lockedUntil - this.now());
  }

  /** Notes a wrong token. */
  failed(): void {
    this.failures += 1;
    const over = this.failures - FREE_FAILURES;
    if (over < 0) return;
    this.lockedUntil = this.now() + Math.min(MAX_LOCK_MS, FIRST_LOCK_MS * 2 ** Math.min(over, 16));
  }

  /** Notes a right token. */
  succeeded(): void {
    this.failures = 0;
    this.lockedUntil = 0;
  }
}

/**
 * The 429 answer (with `Retry-After`) while the throttle is locked, or undefined when a token
 * may be checked now.
 */
export function lockedOut(c: Ctx, deps: Deps): Response | Promise<Response> | undefined {
  const waitMs = deps.throttle.waitMs();
  if (waitMs === 0) return undefined;
  const seconds = Math.ceil(waitMs / 1000);
  c.header('Retry-After', String(seconds));
  return errorPage(
    c,
    deps,
    429,
    `Too many wrong tokens: no token is checked for the next ${seconds} s.`,
  );
}
