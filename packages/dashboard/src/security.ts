import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/** Name of the session cookie. */
export const SESSION_COOKIE = 'justonce_dashboard';
/** How long a login lasts, in seconds. */
export const SESSION_MAX_AGE_S = 12 * 60 * 60;

/**
 * Compares two secrets in constant time. Both sides are hashed first, so neither their
 * lengths nor their first differing byte show in the timing.
 */
export function secretsEqual(expected: string, given: string): boolean {
  const a = createHash('sha256').update(expected, 'utf8').digest();
  const b = createHash('sha256').update(given, 'utf8').digest();
  return timingSafeEqual(a, b);
}

function mac(token: string, purpose: string, value: string): string {
  return createHmac('sha256', token).update(`${purpose}\n${value}`).digest('base64url');
}

/**
 * A new session cookie value: issue time, a random id and an HMAC of both keyed by the
 * token. The token never leaves the server; changing it ends every session.
 */
export function newSession(token: string, nowMs: number): string {
  const body = `${nowMs.toString(36)}.${randomBytes(16).toString('base64url')}`;
  return `${body}.${mac(token, 'session', body)}`;
}

/** Whether `value` is a session this token issued that has not expired. */
export function validSession(token: string, value: string | undefined, nowMs: number): boolean {
  if (value === undefined) return false;
  const parts = value.split('.');
  if (parts.length !== 3) return false;
  const [issued, id, given] = parts as [string, string, string];
  const issuedMs = Number.parseInt(issued, 36);
  if (!Number.isFinite(issuedMs) || id === '') return false;
  const fresh = issuedMs <= nowMs + 60_000 && nowMs - issuedMs < SESSION_MAX_AGE_S * 1000;
  // The MAC is checked whatever the age, so timing does not tell a stale cookie from a forged one.
  const genuine = secretsEqual(mac(token, 'session', `${issued}.${id}`), given);
  return genuine && fresh;
}

/** The session's CSRF token, put in every form (double submit, derived from the cookie). */
export function csrfToken(token: string, session: string): string {
  return mac(token, 'csrf', session);
}

/** A fresh nonce for the Content-Security-Policy of one response. */
export function newNonce(): string {
  return randomBytes(16).toString('base64');
}

/** Security headers of every response; pages carry no cacheable data. */
export function securityHeaders(nonce: string): Record<string, string> {
  return {
    'Content-Security-Policy': [
      "default-src 'none'",
      `script-src 'nonce-${nonce}'`,
      `style-src 'nonce-${nonce}'`,
      "img-src 'self'",
      "form-action 'self'",
      "frame-ancestors 'none'",
      "base-uri 'none'",
    ].join('; '),
    'X-Frame-Options': 'DENY',
    'X-Content-Type-Options': 'nosniff',
    // Not `no-referrer`: with it, browsers send `Origin: null` on form posts.
    'Referrer-Policy': 'same-origin',
    'Cache-Control': 'no-store',
  };
}
