import type { DeadLetter, DeadLetterReason } from '@justonce/core';
import { formOf, viewOf, type App, type Deps } from '../context';
import { keepParams, pageLimit, pageOf, parseAfter, type ListPage } from '../listing';
import { BadInputError, DEAD_LETTER_REASONS, parseReason, parseText, parseTime } from '../parse';
import { bodyBlock } from '../render/body';
import { formatJson, formatTime } from '../render/format';
import { href, html, type Html, type View } from '../render/html';
import { actionButton, actionNote, layout } from '../render/layout';
import { rowList } from '../render/row-list';
import { fieldTable } from '../render/table';
import { registerRowRoutes } from './row-routes';

interface Filters {
  readonly consumer?: string;
  readonly reason?: DeadLetterReason;
  readonly since?: Date;
  readonly until?: Date;
  readonly includeRequeued: boolean;
}

/** The filter fields as they appear in the query string (links, paging, coming back). */
const FILTER_KEYS = ['consumer', 'reason', 'since', 'until', 'requeued'] as const;

function parseFilters(query: (name: string) => string | undefined): Filters {
  const since = parseTime(query('since'), 'since');
  const until = parseTime(query('until'), 'until');
  const consumer = parseText(query('consumer'), 'consumer');
  const reason = parseReason(query('reason'));
  return {
    ...(consumer === undefined ? {} : { consumer }),
    ...(reason === undefined ? {} : { reason }),
    ...(since === undefined ? {} : { since }),
    ...(until === undefined ? {} : { until }),
    includeRequeued: query('requeued') === '1',
  };
}

/** Only the filter keys of a query string, so that coming back never carries anything else. */
function filterQuery(query: string): string {
  return keepParams(query, FILTER_KEYS);
}

function filterForm(view: View, filters: Filters, query: URLSearchParams): Html {
  const value = (name: string): string => query.get(name) ?? '';
  return html`<form
    class="filters"
    method="get"
    action="${href(view, '/dead-letters')}"
    id="filters"
  >
    <label>Consumer <input name="consumer" value="${filters.consumer ?? ''}" /></label>
    <label
      >Reason
      <select name="reason">
        <option value="">any</option>
        ${DEAD_LETTER_REASONS.map((r) => html`<option value="${r}" ${filters.reason === r ? html`selected` : ''}>${r}</option>`)}
      </select></label
    >
    <label
      >Since (UTC) <input name="since" value="${value('since')}" placeholder="2026-01-31T08:00"
    /></label>
    <label
      >Until (UTC) <input name="until" value="${value('until')}" placeholder="2026-01-31T09:00"
    /></label>
    <label
      ><span
        ><input
          type="checkbox"
          name="requeued"
          value="1"
          ${filters.includeRequeued ? html`checked` : ''}
        />
        include requeued</span
      ></label
    >
    <button type="submit">Filter</button>
    <a href="${href(view, '/dead-letters')}">Clear</a>
  </form>`;
}

function errorSummary(letter: DeadLetter): string {
  const text = [letter.errorCode, letter.errorMessage].filter((s) => s !== null).join(': ');
  return text.length > 160 ? `${text.slice(0, 160)}…` : text;
}

function letterCells(l: DeadLetter): Html {
  return html`<td>${l.consumer}</td>
    <td>${l.scope}</td>
    <td>${l.messageId ?? '—'}</td>
    <td>${l.reason}</td>
    <td>${errorSummary(l)}</td>
    <td class="n">${l.attempts}</td>
    <td>${formatTime(l.deadAt)}</td>
    <td>${formatTime(l.requeuedAt)}</td>`;
}

function listPage(
  view: View,
  filters: Filters,
  query: URLSearchParams,
  found: ListPage<DeadLetter>,
): Html {
  return html`${filterForm(view, filters, query)} ${actionNote(view)}
  ${rowList(view, {
    path: '/dead-letters',
    noun: 'dead letter',
    back: filterQuery(query.toString()),
    requeue: true,
    tableId: 'dead-letters',
    heads: [
      'Consumer',
      'Scope',
      'Message id',
      'Reason',
      'Error',
      'Attempts',
      'Dead at',
      'Requeued at',
    ],
    rows: found.rows,
    cells: letterCells,
    empty: 'No dead letters match.',
    next: found.next,
  })}`;
}

function detailPage(view: View, letter: DeadLetter): Html {
  const needsDestination = letter.delivery.source === undefined;
  const destination = needsDestination
    ? html`<label
        >Destination <input name="destination" required placeholder="topic, queue or exchange"
      /></label> `
    : undefined;
  return html`${actionNote(view)}
    <div class="actions">
      ${actionButton(view, `/dead-letters/${letter.id}/requeue`, 'Requeue', { confirm: 'Requeue this dead letter?', ...(destination === undefined ? {} : { extra: destination }) })}
      ${actionButton(view, `/dead-letters/${letter.id}/delete`, 'Delete', { confirm: 'Delete this dead letter for good?', danger: true })}
      <a href="${href(view, `/dead-letters?consumer=${encodeURIComponent(letter.consumer)}`)}"
        >All of ${letter.consumer}</a
      >
    </div>
    ${fieldTable('letter', [
      ['Id', letter.id],
      ['Consumer', letter.consumer],
      ['Scope', letter.scope],
      ['Message id', letter.messageId],
      ['Reason', letter.reason],
      ['Attempts', letter.attempts],
      ['Key', letter.key],
      ['First attempt', formatTime(letter.firstAttemptAt)],
      ['Dead at', formatTime(letter.deadAt)],
      ['Requeued at', formatTime(letter.requeuedAt)],
      ['Fingerprint', letter.fingerprint],
    ])}
    <h2>Error</h2>
    <pre id="error-text">
${[letter.errorCode, letter.errorMessage].filter((s) => s !== null).join('\n') || '—'}</pre>
    <h2>Headers</h2>
    ${fieldTable('headers', Object.entries(letter.headers), { empty: 'No headers.' })}
    <h2>Body</h2>
    ${bodyBlock(letter.body)}
    <h2>Delivery</h2>
    <pre id="delivery">${formatJson(letter.delivery)}</pre>`;
}

/** `/dead-letters`: filter, list, detail, requeue (through the outbox) and delete. */
export function registerDeadLetterPages(app: App, deps: Deps): void {
  const { admin } = deps.options;

  app.get('/dead-letters', async (c) => {
    const view = viewOf(c, deps);
    const query = new URL(c.req.url).searchParams;
    let filters: Filters;
    try {
      filters = parseFilters((name) => c.req.query(name));
    } catch (error) {
      if (!(error instanceof BadInputError)) throw error;
      const content = html`${filterForm(view, { includeRequeued: false }, query)}
        <p class="error" id="error">${error.message}</p>`;
      return c.html(layout(view, 'Dead letters', content), 400);
    }
    const after = parseAfter(c.req.query('after'));
    const found = await pageOf(admin.deadLetters.select({ ...filters, ...pageLimit(after) }));
    return c.html(layout(view, 'Dead letters', listPage(view, filters, query, found)));
  });

  registerRowRoutes(app, deps, {
    path: '/dead-letters',
    what: 'dead-letter',
    filters: filterQuery,
    get: (id) => admin.deadLetters.get(id),
    detail: detailPage,
    requeue: (id) => admin.redeliverDeadLetter(id),
    requeueOne: async (c, id) => {
      const destination = parseText((await formOf(c))['destination'], 'destination');
      const outboxId = await admin.redeliverDeadLetter(
        id,
        destination === undefined ? {} : { destination },
      );
      return { show: id, outboxId };
    },
    delete: (id) => admin.deadLetters.delete(id),
  });
}
