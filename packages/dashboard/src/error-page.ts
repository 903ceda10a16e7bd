import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { viewOf, type Ctx, type Deps } from './context';
import { html } from './render/html';
import { layout } from './render/layout';

/** An error page, escaped like every other. */
export function errorPage(
  c: Ctx,
  deps: Deps,
  status: ContentfulStatusCode,
  message: string,
): Response | Promise<Response> {
  const heading = status === 403 ? 'Refused' : status === 404 ? 'Not found' : 'Error';
  return c.html(
    layout(viewOf(c, deps), heading, html`<p class="error" id="error">${message}</p>`),
    status,
  );
}
