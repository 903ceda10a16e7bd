import { canAct, href, html, type Html, type View } from './html';

const STYLE = html`
  body { font: 14px/1.45 system-ui, sans-serif; margin: 0; color: #1f2937; background: #f9fafb; }
  header { background: #111827; color: #f9fafb; padding: 8px 16px; display: flex; gap: 16px;
  align-items: center; flex-wrap: wrap; } header a { color: #e5e7eb; text-decoration: none; } header
  a:hover, header a[aria-current] { color: #fff; text-decoration: underline; } header .who {
  margin-left: auto; display: flex; gap: 8px; align-items: center; } header form { margin: 0; } main
  { padding: 16px; max-width: 1200px; } h1 { font-size: 20px; margin: 8px 0 12px; } h2 { font-size:
  16px; margin: 20px 0 8px; } table { border-collapse: collapse; background: #fff; margin-bottom:
  12px; } th, td { border: 1px solid #e5e7eb; padding: 4px 8px; text-align: left; vertical-align:
  top; } th { background: #f3f4f6; } td.n { text-align: right; font-variant-numeric: tabular-nums; }
  pre { background: #fff; border: 1px solid #e5e7eb; padding: 8px; overflow: auto; max-height:
  480px; white-space: pre-wrap; word-break: break-all; } .muted { color: #6b7280; } .notice {
  background: #ecfdf5; border: 1px solid #10b981; padding: 6px 10px; } .warn { background: #fffbeb;
  border: 1px solid #f59e0b; padding: 6px 10px; } .error { background: #fef2f2; border: 1px solid
  #ef4444; padding: 6px 10px; } form.filters { display: flex; gap: 8px; flex-wrap: wrap;
  align-items: end; margin-bottom: 12px; } form.filters label { display: flex; flex-direction:
  column; font-size: 12px; } form.inline { display: inline; } .actions { display: flex; gap: 8px;
  margin: 8px 0; align-items: center; } button { cursor: pointer; } button.danger { color: #b91c1c;
  } button:disabled { color: #9ca3af; cursor: not-allowed; } .legend { margin-right: 12px; }
  figure.chart { margin: 0; }
`;

/** Bulk select and confirmations; the only script, allowed by the CSP nonce. Constant text. */
const SCRIPT = html`
  document.querySelectorAll('input[data-select-all]').forEach(function (all) {
  all.addEventListener('change', function () {
  document.querySelectorAll('input[name="id"]').forEach(function (box) { box.checked = all.checked;
  }); }); }); document.querySelectorAll('form[data-confirm]').forEach(function (form) {
  form.addEventListener('submit', function (event) { var verb = event.submitter &&
  event.submitter.value ? event.submitter.value : 'apply'; var text =
  form.getAttribute('data-confirm'); if (form.hasAttribute('data-bulk')) { var n =
  form.querySelectorAll('input[name="id"]:checked').length; if (n === 0) { event.preventDefault();
  alert('Select at least one row first.'); return; } text = verb.charAt(0).toUpperCase() +
  verb.slice(1) + ' ' + n + ' selected ' + text + '?'; } if (!confirm(text)) event.preventDefault();
  }); });
`;

const PAGES = [
  ['/', 'Overview'],
  ['/dead-letters', 'Dead letters'],
  ['/outbox', 'Outbox'],
  ['/operations', 'Operations'],
] as const;

function who(view: View): Html {
  switch (view.access) {
    case 'read-only':
      return html`<span class="muted">read-only (no token configured)</span>`;
    case 'anonymous':
      return html`<a href="${href(view, `/login?next=${encodeURIComponent(view.path)}`)}"
        >Log in</a
      >`;
    case 'bearer':
      return html`<span>bearer token</span>`;
    case 'session':
      return html`<span>operator</span>
        <form method="post" action="${href(view, '/logout')}">
          <input type="hidden" name="_csrf" value="${view.csrf}" />
          <button type="submit">Log out</button>
        </form>`;
  }
}

/** A whole page: header with navigation and login state, the notice, then `content`. */
export function layout(view: View, heading: string, content: Html): Html {
  const current = (path: string): boolean =>
    path === '/' ? view.path === '/' : view.path === path || view.path.startsWith(`${path}/`);
  return html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <meta name="referrer" content="same-origin" />
        <title>${heading} · ${view.title}</title>
        <style nonce="${view.nonce}">
          ${STYLE}
        </style>
      </head>
      <body>
        <header>
          <strong>${view.title}</strong>
          <nav>
            ${PAGES.map(([path, label]) => html`<a href="${href(view, path)}" ${current(path) ? html`aria-current="page"` : ''}>${label}</a> `)}
          </nav>
          <span class="who">${who(view)}</span>
        </header>
        <main>
          <h1>${heading}</h1>
          ${view.notice === undefined ? '' : html`<p class="notice" role="status">${view.notice}</p>`}
          ${content}
        </main>
        <script nonce="${view.nonce}">
          ${SCRIPT};
        </script>
      </body>
    </html>`;
}

/** Why the action buttons are disabled, or nothing when they work. */
export function actionNote(view: View): Html {
  if (view.access === 'read-only') {
    return html`<p class="warn">
      Read-only: no operator token is configured, so requeue, delete and release are off.
    </p>`;
  }
  if (view.access === 'anonymous') {
    return html`<p class="warn">
      <a href="${href(view, `/login?next=${encodeURIComponent(view.path)}`)}">Log in</a> with the
      operator token to requeue, delete or release.
    </p>`;
  }
  return html``;
}

/** The hidden CSRF field of a form. */
export function csrfField(view: View): Html {
  return view.csrf === undefined
    ? html``
    : html`<input type="hidden" name="_csrf" value="${view.csrf}" />`;
}

/**
 * A one-button POST form (`fields` as hidden inputs), asking `confirm` first; a disabled
 * button when the request may not act.
 */
export function actionButton(
  view: View,
  path: string,
  label: string,
  options: {
    fields?: Readonly<Record<string, string>>;
    confirm?: string;
    danger?: boolean;
    extra?: Html;
  } = {},
): Html {
  const cls = options.danger === true ? 'danger' : '';
  if (!canAct(view)) return html`<button type="button" class="${cls}" disabled>${label}</button>`;
  const hidden = Object.entries(options.fields ?? {}).map(
    ([name, value]) => html`<input type="hidden" name="${name}" value="${value}" />`,
  );
  return html`<form
    class="inline"
    method="post"
    action="${href(view, path)}"
    ${options.confirm === undefined ? '' : html`data-confirm="${options.confirm}"`}
  >
    ${csrfField(view)}${hidden}${options.extra ?? ''}<button type="submit" class="${cls}">
      ${label}
    </button>
  </form>`;
}
