import { deleteCookie, setCookie } from 'hono/cookie';
import { formOf, redirectDone, viewOf, type App, type Ctx, type Deps } from '../context';
import { html, type View } from '../render/html';
import { layout } from '../render/layout';
import { newSession, secretsEqual, SESSION_COOKIE, SESSION_MAX_AGE_S } from '../security';
import { clientOf, lockedOut } from '../wrong-tokens';

/** Where to go after logging in: a page of this dashboard only, never another site. */
function nextPath(value: unknown): string {
  return typeof value === 'string' && /^\/(?![/\\])[^\s]*$/.test(value) ? value : '/';
}

function loginForm(view: View, next: string, failed: boolean): ReturnType<typeof html> {
  if (view.access === 'read-only') {
    return html`<p class="warn">
      This dashboard is read-only: it was started without an operator token, so there is nothing to
      log in to.
    </p>`;
  }
  return html`${failed ? html`<p class="error" id="error">That is not the operator token.</p>` : ''}
    <form method="post" action="${view.base}/login">
      <input type="hidden" name="next" value="${next}" />
      <label
        >Operator token
        <input
          type="password"
          name="token"
          autocomplete="current-password"
          required
          minlength="16"
          autofocus
      /></label>
      <button type="submit">Log in</button>
    </form>
    <p class="muted">
      The token is checked on the server; the browser keeps an HttpOnly cookie holding an HMAC,
      never the token itself. Scripts may send
      <code>Authorization: Bearer &lt;token&gt;</code> instead.
    </p>`;
}

function cookiePath(deps: Deps): string {
  return deps.options.basePath === '' ? '/' : deps.options.basePath;
}

/** `/login` (form and check) and `/logout`. */
export function registerLoginPages(app: App, deps: Deps): void {
  app.get('/login', (c) => {
    const view = viewOf(c, deps);
    return c.html(layout(view, 'Log in', loginForm(view, nextPath(c.req.query('next')), false)));
  });

  app.post('/login', async (c: Ctx) => {
    const form = await formOf(c);
    const token = deps.options.token;
    const next = nextPath(form['next']);
    const given = form['token'];
    const client = clientOf(c, 'form');
    const locked = lockedOut(c, deps, client);
    if (locked !== undefined) return locked;
    if (token === undefined || typeof given !== 'string' || !secretsEqual(token, given)) {
      deps.throttle.failed(client);
      return c.html(layout(viewOf(c, deps), 'Log in', loginForm(viewOf(c, deps), next, true)), 401);
    }
    deps.throttle.succeeded(client);
    setCookie(c, SESSION_COOKIE, newSession(token, Date.now()), {
      httpOnly: true,
      sameSite: 'Strict',
      secure: new URL(c.req.url).protocol === 'https:',
      path: cookiePath(deps),
      maxAge: SESSION_MAX_AGE_S,
    });
    const [path, query = ''] = next.split('?', 2) as [string, string?];
    return redirectDone(c, deps, path, { done: 'logged-in' }, query);
  });

  app.post('/logout', (c) => {
    deleteCookie(c, SESSION_COOKIE, { path: cookiePath(deps) });
    return redirectDone(c, deps, '/', { done: 'logged-out' });
  });
}
