import { isJustonceError, type JustonceError } from '@justonce/core';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { Hono } from 'hono';
import { getCookie } from 'hono/cookie';
import { csrf } from 'hono/csrf';
import { HTTPException } from 'hono/http-exception';
import { formOf, type App, type AppEnv, type Ctx, type Deps } from './context';
import { errorPage } from './error-page';
import { LoginThrottle } from './login-throttle';
import { resolveDashboardOptions } from './options';
import { registerDeadLetterPages } from './pages/dead-letters';
import { registerLoginPages } from './pages/login';
import { registerOperationsPages } from './pages/operations';
import { registerOutboxPages } from './pages/outbox';
import { registerOverviewPage } from './pages/overview';
import { BadInputError } from './parse';
import { StatusSampler } from './sampler';
import {
  csrfToken,
  newNonce,
  secretsEqual,
  securityHeaders,
  SESSION_COOKIE,
  validSession,
} from './security';
import type { Dashboard, DashboardOptions } from './types';
import { clientOf, lockedOut } from './wrong-tokens';

const MAX_BODY_BYTES = 256 * 1024;

/**
 * Refuses a body over {@link MAX_BODY_BYTES} before anything reads it: forms are small (a bulk
 * form of 1000 ids is ~20 KB) and the login form is read unauthenticated. Browsers send a form
 * with its `Content-Length`, which node:http holds the body to; a body without one (chunked)
 * is refused rather than read unbounded. Not hono's `bodyLimit`: on a request without a
 * length it rebuilds the request, which fails under @hono/node-server with its own Request.
 */
function limitBody(deps: Deps) {
  return async (c: Ctx, next: () => Promise<void>): Promise<Response | void> => {
    if (/^(GET|HEAD|OPTIONS)$/.test(c.req.method)) return next();
    const length = c.req.header('content-length');
    if (length === undefined) {
      if (c.req.header('transfer-encoding') === undefined) return next(); // no body at all
      return errorPage(c, deps, 411, 'Send the form with a Content-Length.');
    }
    if (!/^\d{1,9}$/.test(length) || Number(length) > MAX_BODY_BYTES) {
      return errorPage(c, deps, 413, 'The form is too large.');
    }
    return next();
  };
}

/** Sets `access` (and the CSRF token of a session) from the Authorization header or the cookie. */
function identify(deps: Deps) {
  return async (c: Ctx, next: () => Promise<void>): Promise<Response | void> => {
    c.set('csrf', undefined);
    const { token } = deps.options;
    if (token === undefined) {
      c.set('access', 'read-only');
      return next();
    }
    // Only the Bearer scheme is ours: a proxy's Basic credentials must not break reading.
    const bearer = /^Bearer\s+(\S+)\s*$/i.exec(c.req.header('authorization') ?? '');
    if (bearer !== null) {
      const client = clientOf(c, 'bearer');
      const locked = lockedOut(c, deps, client);
      if (locked !== undefined) return locked;
      if (!secretsEqual(token, bearer[1]!)) {
        deps.throttle.failed(client);
        return errorPage(
          c,
          deps,
          401,
          'The Authorization header does not carry the operator token.',
        );
      }
      deps.throttle.succeeded(client);
      c.set('access', 'bearer');
      return next();
    }
    const session = getCookie(c, SESSION_COOKIE);
    if (session !== undefined && validSession(token, session, Date.now())) {
      c.set('access', 'session');
      c.set('csrf', csrfToken(token, session));
    } else {
      c.set('access', 'anonymous');
    }
    return next();
  };
}

/**
 * Guards every POST: a bearer token passes (browsers never add one on their own); otherwise
 * the request must come from this origin (hono/csrf: Origin or Sec-Fetch-Site), carry a
 * session, and echo the session's CSRF token. Login only needs the origin check.
 */
function guardActions(deps: Deps) {
  const sameOrigin = csrf();
  return async (c: Ctx, next: () => Promise<void>): Promise<Response | void> => {
    if (/^(GET|HEAD|OPTIONS)$/.test(c.req.method)) return next();
    const access = c.get('access');
    if (access === 'bearer') return next();
    await sameOrigin(c, async () => {});
    if (access === 'read-only') {
      return errorPage(
        c,
        deps,
        403,
        'This dashboard is read-only: no operator token is configured.',
      );
    }
    if (c.req.path === `${deps.options.basePath}/login`) return next();
    if (access !== 'session') {
      return errorPage(c, deps, 403, 'Log in with the operator token first.');
    }
    const given = (await formOf(c))['_csrf'];
    if (typeof given !== 'string' || !secretsEqual(c.get('csrf') ?? '', given)) {
      return errorPage(
        c,
        deps,
        403,
        'The form is stale or came from elsewhere: reload the page and try again.',
      );
    }
    return next();
  };
}

/**
 * A store error's status: an unknown letter 404, one that cannot go back through the outbox
 * 409, another refusal (a bad argument, no destination known) 400, an outage 503.
 */
function statusOf(error: JustonceError): ContentfulStatusCode {
  if (error.code === 'DEAD_LETTER_NOT_FOUND') return 404;
  if (error.retriable) return 503;
  return error.code === 'DEAD_LETTER_NOT_REDELIVERABLE' ? 409 : 400;
}

function onError(deps: Deps) {
  return (error: Error, c: Ctx): Response | Promise<Response> => {
    if (error instanceof HTTPException) {
      if (error.status === 403) {
        return errorPage(
          c,
          deps,
          403,
          'Refused: the request did not come from this dashboard’s own pages.',
        );
      }
      return error.getResponse();
    }
    if (error instanceof BadInputError) return errorPage(c, deps, 400, error.message);
    if (isJustonceError(error)) {
      return errorPage(c, deps, statusOf(error), `${error.code}: ${error.message}`, error.code);
    }
    // Reads need no token: an unexpected error's text (SQL, hosts) is not shown to anyone.
    return errorPage(c, deps, 500, `Internal error (${error.name}).`);
  };
}

/**
 * Creates the dashboard: overview, dead letters, outbox and operations pages over
 * `options.admin`, as a Fetch API handler. Serve it with {@link serveDashboard}, mount it
 * with {@link dashboardListener} (node:http, Express), {@link fastifyDashboard}, or hand
 * `dashboard.fetch` to any Fetch server. Starts sampling the status for the overview's chart;
 * `close()` stops it.
 *
 * @throws ConfigurationError for unknown options, a token shorter than 16 characters, a bad
 * base path or sampling interval.
 */
export function createDashboard(options: DashboardOptions): Dashboard {
  const resolved = resolveDashboardOptions(options);
  const sampler = new StatusSampler(resolved.admin, resolved.sampleEveryMs);
  const deps: Deps = { options: resolved, sampler, throttle: new LoginThrottle() };
  const root = new Hono<AppEnv>({ strict: false });
  // On the root, so that every answer gets the headers, one outside the base path too.
  root.use('*', async (c, next) => {
    const nonce = newNonce();
    c.set('nonce', nonce);
    await next();
    for (const [name, value] of Object.entries(securityHeaders(nonce)))
      c.res.headers.set(name, value);
  });
  const { basePath } = resolved;
  const app: App = basePath === '' ? root : root.basePath(basePath);
  app.use('*', identify(deps));
  app.use('*', limitBody(deps));
  app.use('*', guardActions(deps));
  registerOverviewPage(app, deps);
  registerLoginPages(app, deps);
  registerDeadLetterPages(app, deps);
  registerOutboxPages(app, deps);
  registerOperationsPages(app, deps);
  // On the root: `basePath()` gives a copy whose handlers `root.fetch` would not use.
  const inside = (path: string): boolean =>
    basePath === '' || path === basePath || path.startsWith(`${basePath}/`);
  root.notFound((c) =>
    inside(c.req.path) ? errorPage(c, deps, 404, 'No such page.') : c.text('Not found', 404),
  );
  root.onError(onError(deps));
  return {
    basePath: resolved.basePath,
    fetch: async (request, client) =>
      root.fetch(request, {
        ...(typeof client?.address === 'string' ? { address: client.address } : {}),
      }),
    close: () => sampler.stop(),
  };
}
