import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { viewOf, wantsJson, type Ctx, type Deps } from './context';
import { html } from './render/html';
import { layout } from './render/layout';

/**
 * An error page, escaped like every other; for a client that wants JSON,
 * `{ "error": { "status", "message", "code"? } }` (`code`: a justonce error's).
 */
export function errorPage(
  c: Ctx,
  deps: Deps,
  status: ContentfulStatusCode,
  message: string,
  code?: string,
): Response | Promise<Response> {
  if (wantsJson(c)) {
    return c.json({ error: { status, message, ...(code === undefined ? {} : { code }) } }, status);
  }
  const heading = status === 403 ? 'Refused' : status === 404 ? 'Not found' : 'Error';
  return c.html(
    layout(viewOf(c, deps), heading, html`<p class="error" id="error">${message}</p>`),
    status,
  );
}
