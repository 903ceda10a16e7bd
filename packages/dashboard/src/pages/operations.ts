import type { AdminOperationRecord } from '@justonce/core';
import type { ListOperationsOptions } from '@justonce/core/admin';
import { singleResult } from '../bulk';
import { formOf, redirectDone, viewOf, type App, type Deps } from '../context';
import { BadInputError, parseText } from '../parse';
import { formatJson, formatTime } from '../render/format';
import { canAct, href, html, type Html, type View } from '../render/html';
import { actionNote, csrfField, layout } from '../render/layout';
import { dataTable } from '../render/table';

const LIMIT = 200;

function releaseForm(view: View, r: AdminOperationRecord): Html {
  if (!canAct(view)) return html`<button type="button" disabled>Release</button>`;
  const confirm = r.pastLease
    ? 'Release this record? The next delivery or call runs the effect again.'
    : 'Its lease has not run out: the owner may still be running. Release anyway?';
  return html`<form
    class="inline"
    method="post"
    action="${href(view, '/operations/release')}"
    data-confirm="${confirm}"
  >
    ${csrfField(view)}
    <input type="hidden" name="scope" value="${r.scope}" />
    <input type="hidden" name="operation" value="${r.operation}" />
    <input type="hidden" name="key" value="${r.key}" />
    ${r.pastLease ? '' : html`<label><input type="checkbox" name="force" value="1" required /> force (in lease)</label> `}
    <button type="submit">Release</button>
  </form>`;
}

function recordRows(view: View, records: readonly AdminOperationRecord[]): Html[] {
  return records.map(
    (r) =>
      html`<tr data-key="${r.key}" class="${r.pastLease ? 'past-lease' : 'in-lease'}">
        <td>${r.operation}</td>
        <td>${r.scope}</td>
        <td>${r.key}</td>
        <td>${r.pastLease ? html`<strong>past lease</strong>` : 'in lease'}</td>
        <td>${r.ownerId ?? '—'}</td>
        <td>${formatTime(r.leaseUntil)}</td>
        <td class="n">${r.attempts}</td>
        <td>${formatTime(r.createdAt)}</td>
        <td>${formatTime(r.updatedAt)}</td>
        <td>${r.error === null || r.error === undefined ? '—' : formatJson(r.error)}</td>
        <td>${releaseForm(view, r)}</td>
      </tr>`,
  );
}

/** `/operations`: records in progress (inbox claims included), past their lease or not; release. */
export function registerOperationsPages(app: App, deps: Deps): void {
  const { admin } = deps.options;

  app.get('/operations', async (c) => {
    const state = c.req.query('state') === 'past-lease' ? 'past-lease' : 'in-progress';
    const operation = parseText(c.req.query('operation'), 'operation');
    const scope = parseText(c.req.query('scope'), 'scope');
    const options: ListOperationsOptions = {
      state,
      limit: LIMIT,
      ...(operation === undefined ? {} : { operation }),
      ...(scope === undefined ? {} : { scope }),
    };
    const records = await admin.operations.list(options);
    const view = viewOf(c, deps);
    const content = html`<form
        class="filters"
        method="get"
        action="${href(view, '/operations')}"
        id="filters"
      >
        <label
          >Show
          <select name="state">
            <option value="in-progress" ${state === 'in-progress' ? html`selected` : ''}>
              in progress
            </option>
            <option value="past-lease" ${state === 'past-lease' ? html`selected` : ''}>
              past lease only
            </option>
          </select></label
        >
        <label>Operation or consumer <input name="operation" value="${operation ?? ''}" /></label>
        <label>Scope <input name="scope" value="${scope ?? ''}" /></label>
        <button type="submit">Filter</button>
      </form>
      <p class="muted">
        A record past its lease belongs to an owner that died or hangs. Releasing it marks it
        FAILED_RETRIABLE (error RELEASED) so the next delivery or call runs the effect again.
        Releasing one still in its lease needs "force": the owner may still be running, and its
        completion is then refused by fencing.
      </p>
      ${actionNote(view)}
      ${dataTable({
        id: 'operations',
        heads: [
          'Operation',
          'Scope',
          'Key',
          'State',
          'Owner',
          'Lease until',
          'Attempts',
          'Created',
          'Updated',
          'Error',
          '',
        ],
        rows: recordRows(view, records),
        empty: 'Nothing in progress.',
      })}
      ${records.length === LIMIT ? html`<p class="muted">Showing the first ${LIMIT}; filter to see others.</p>` : ''}`;
    return c.html(layout(view, 'Operations', content));
  });

  app.post('/operations/release', async (c) => {
    const form = await formOf(c);
    // Exactly as listed (no trimming): keys and scopes are compared byte for byte.
    const exact = (name: string): string | undefined => {
      const value = form[name];
      return typeof value === 'string' && value !== '' ? value : undefined;
    };
    const operation = exact('operation');
    const key = exact('key');
    const scope = exact('scope');
    if (operation === undefined || key === undefined)
      throw new BadInputError('operation and key are required');
    const released = await admin.operations.release(
      { operation, key, ...(scope === undefined ? {} : { scope }) },
      { force: form['force'] === '1' },
    );
    const back = new URLSearchParams({ operation }).toString();
    return redirectDone(
      c,
      deps,
      '/operations',
      { done: 'released', what: 'record', ...singleResult(released), one: true },
      back,
    );
  });
}
