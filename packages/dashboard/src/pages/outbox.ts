import type { OutboxEntry } from '@justonce/core/admin';
import { viewOf, type App, type Deps } from '../context';
import { keepParams, pageLimit, pageOf, parseAfter, type ListPage } from '../listing';
import { BadInputError, parseText } from '../parse';
import { bodyBlock } from '../render/body';
import { formatTime } from '../render/format';
import { href, html, type Html, type View } from '../render/html';
import { actionButton, actionNote, layout } from '../render/layout';
import { rowList } from '../render/row-list';
import { fieldTable } from '../render/table';
import { outboxStatusTable } from './overview';
import { registerRowRoutes } from './row-routes';

const STATUSES = ['dead', 'stuck', 'pending'] as const;
type ListStatus = (typeof STATUSES)[number];

function parseStatus(value: string | undefined): ListStatus {
  if (value === undefined || value === '') return 'dead';
  if (!(STATUSES as readonly string[]).includes(value))
    throw new BadInputError(`status must be one of ${STATUSES.join(', ')}`);
  return value as ListStatus;
}

function filterQuery(query: string): string {
  return keepParams(query, ['status', 'destination']);
}

function entryCells(e: OutboxEntry): Html {
  return html`<td>${e.destination}</td>
    <td>${e.key ?? '—'}</td>
    <td>${e.messageId}</td>
    <td>${e.status}</td>
    <td class="n">${e.attempts}</td>
    <td>${e.lastError ?? '—'}</td>
    <td>${formatTime(e.createdAt)}</td>
    <td>${formatTime(e.availableAt)}</td>`;
}

function listSection(
  view: View,
  status: ListStatus,
  destination: string | undefined,
  page: ListPage<OutboxEntry>,
): Html {
  const back = filterQuery(
    new URLSearchParams({
      status,
      ...(destination === undefined ? {} : { destination }),
    }).toString(),
  );
  return html`<form class="filters" method="get" action="${href(view, '/outbox')}" id="filters">
      <label
        >Show
        <select name="status">
          ${STATUSES.map((s) => html`<option value="${s}" ${s === status ? html`selected` : ''}>${s}</option>`)}
        </select></label
      >
      <label>Destination <input name="destination" value="${destination ?? ''}" /></label>
      <button type="submit">Filter</button>
    </form>
    <p class="muted">
      Stuck: pending for over a minute, or pending after a failed attempt. Requeue puts a dead event
      back at the end of its key's queue.
    </p>
    ${actionNote(view)}
    ${rowList(view, {
      path: '/outbox',
      noun: 'outbox event',
      back,
      requeue: status === 'dead',
      tableId: 'outbox-events',
      heads: [
        'Destination',
        'Key',
        'Message id',
        'Status',
        'Attempts',
        'Last error',
        'Created',
        'Next try / dead at',
      ],
      rows: page.rows,
      cells: entryCells,
      empty: `No ${status} events.`,
      next: page.next,
    })}`;
}

function detailPage(view: View, entry: OutboxEntry): Html {
  return html`${actionNote(view)}
    <div class="actions">
      ${entry.status === 'dead' ? actionButton(view, `/outbox/${entry.id}/requeue`, 'Requeue', { confirm: 'Publish this event again?' }) : ''}
      ${entry.status === 'published' ? '' : actionButton(view, `/outbox/${entry.id}/delete`, 'Delete', { confirm: 'Delete this outbox event for good?', danger: true })}
    </div>
    ${fieldTable('event', [
      ['Id', entry.id],
      ['Destination', entry.destination],
      ['Key', entry.key],
      ['Message id', entry.messageId],
      ['Status', entry.status],
      ['Attempts', entry.attempts],
      ['Created', formatTime(entry.createdAt)],
      [entry.status === 'dead' ? 'Dead at' : 'Next try', formatTime(entry.availableAt)],
      ['Published', formatTime(entry.publishedAt)],
    ])}
    <h2>Last error</h2>
    <pre id="error-text">${entry.lastError ?? '—'}</pre>
    <h2>Headers</h2>
    ${fieldTable('headers', Object.entries(entry.headers), { empty: 'No headers.' })}
    <h2>Payload</h2>
    ${bodyBlock(entry.payload)}`;
}

/** `/outbox`: figures by destination, dead / stuck / pending events, detail, requeue, delete. */
export function registerOutboxPages(app: App, deps: Deps): void {
  const { admin } = deps.options;

  app.get('/outbox', async (c) => {
    const status = parseStatus(c.req.query('status'));
    const destination = parseText(c.req.query('destination'), 'destination');
    const after = parseAfter(c.req.query('after'));
    const selection = admin.outbox.select({
      status,
      ...(destination === undefined ? {} : { destination }),
      ...pageLimit(after),
    });
    const [figures, page] = await Promise.all([admin.status(), pageOf(selection)]);
    const view = viewOf(c, deps);
    const content = html`<h2>By destination</h2>
      ${outboxStatusTable(view, figures.outbox)}
      <h2>Events</h2>
      ${listSection(view, status, destination, page)}`;
    return c.html(layout(view, 'Outbox', content));
  });

  registerRowRoutes(app, deps, {
    path: '/outbox',
    what: 'outbox-event',
    filters: filterQuery,
    get: (id) => admin.outbox.get(id),
    detail: detailPage,
    requeue: (id) => admin.outbox.requeue(id),
    requeueOne: async (_c, id) => {
      const outboxId = await admin.outbox.requeue(id);
      return outboxId === null ? null : { show: outboxId, outboxId };
    },
    delete: (id) => admin.outbox.delete(id),
  });
}
