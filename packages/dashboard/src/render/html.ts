import { html } from 'hono/html';

/** What `html` tagged templates give: escaped HTML (a promise only when a child is one). */
export type Html = ReturnType<typeof html>;

export { html };

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
