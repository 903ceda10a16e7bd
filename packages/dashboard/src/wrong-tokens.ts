import type { Ctx, Deps } from './context';
import { errorPage } from './error-page';

/** Where a token came from: the login form or an `Authorization: Bearer` header. */
export type TokenChannel = 'form' | 'bearer';

/**
 * The client whose wrong tokens {@link LoginThrottle} counts together: the channel, and the
 * client's address when the server handed it over (`dashboard.fetch(request, { address })`).
 */
export function clientOf(c: Ctx, channel: TokenChannel): string {
  return `${channel} ${typeof c.env.address === 'string' ? c.env.address.slice(0, 100) : ''}`;
}

/**
 * The 429 answer (with `Retry-After`) while tokens of `client` are not checked, or undefined
 * when one may be checked now.
 */
export function lockedOut(
  c: Ctx,
  deps: Deps,
  client: string,
): Response | Promise<Response> | undefined {
  const waitMs = deps.throttle.waitMs(client);
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
