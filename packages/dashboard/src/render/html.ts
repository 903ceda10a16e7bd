import { html as honoHtml } from 'hono/html';
import { visibleText } from '@justonce/core/admin';

/** What `html` tagged templates give: escaped HTML (a promise only when a child is one). */
export type Html = ReturnType<typeof honoHtml>;

/** A value interpolated into a template, its text made visible (arrays are lists of children). */
function visible(value: unknown): unknown {
  if (typeof value === 'string') return visibleText(value);
  return Array.isArray(value) ? value.map(visible) : value;
}

/**
 * `hono/html`'s tagged template, which escapes every interpolated text as HTML, with control
 * characters and lone surrogates in that text written as `\u0000` escapes: on every page, in
 * bodies, headers, errors and names alike, none is dropped by the browser unseen.
 */
export function html(strings: TemplateStringsArray, ...values: unknown[]): Html {
  return honoHtml(strings, ...values.map(visible));
}

/** How the current request may act. */
export type Access =
  /** No token configured: nothing can change. */
  | 'read-only'
  /** A token is configured and the request did not log in. */
  | 'anonymous'
  /** Logged in through the form (cookie); forms carry the CSRF token. */
  | 'session'
  /** An `Authorization: Bearer` header. */
  | 'bearer';

/** What every page needs to render. */
export interface View {
  readonly title: string;
  /** The mount prefix, `''` for the root. */
  readonly base: string;
  readonly nonce: string;
  readonly access: Access;
  /** The session's CSRF token, when logged in. */
  readonly csrf: string | undefined;
  /** The page's path below `base`, to come back after logging in. */
  readonly path: string;
  /** A fixed text after an action (never taken from the request). */
  readonly notice: string | undefined;
}

/** `base` + `path`, the href of a page of this dashboard. */
export function href(view: View, path: string): string {
  return `${view.base}${path}`;
}

/** Whether actions are allowed for this request. */
export function canAct(view: View): boolean {
  return view.access === 'session' || view.access === 'bearer';
}
