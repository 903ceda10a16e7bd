import { backlogFigure, type StoreStatus } from '@justonce/core/admin';
import { viewOf, type App, type Deps } from '../context';
import { statusChart } from '../render/chart';
import { formatAge, formatTime } from '../render/format';
import { href, html, type Html, type View } from '../render/html';
import { layout } from '../render/layout';
import { loadSheddingPanel } from './load-shedding-panel';
import { replicationSlotsPanel } from './replication-slots-panel';
import { dataTable, fieldTable } from '../render/table';
import { sampleOf } from '../sampler';

/** The outbox's figures by destination, each linking to its events; the outbox page shows them too. */
export function outboxStatusTable(view: View, destinations: StoreStatus['outbox']): Html {
  return dataTable({
    id: 'outbox-status',
    heads: ['Destination', 'Pending', 'Oldest pending', 'Dead'],
    rows: destinations.map(
      (d) =>
        html`<tr>
          <td>
            <a href="${href(view, `/outbox?destination=${encodeURIComponent(d.destination)}`)}"
              >${d.destination}</a
            >
          </td>
          <td class="n">${d.pending}</td>
          <td class="n">${formatAge(d.oldestPendingSeconds)}</td>
          <td class="n">${d.dead}</td>
        </tr>`,
    ),
    empty: 'The outbox is empty.',
  });
}

function deadLetterTable(view: View, status: StoreStatus): Html {
  return dataTable({
    id: 'dead-letter-status',
    heads: ['Consumer', 'Reason', 'Waiting', 'Newest'],
    rows: status.deadLetters.map(
      (d) =>
        html`<tr>
          <td>
            <a
              href="${href(view, `/dead-letters?consumer=${encodeURIComponent(d.consumer)}&reason=${d.reason}`)}"
              >${d.consumer}</a
            >
          </td>
          <td>${d.reason}</td>
          <td class="n">${d.count}</td>
          <td>${formatTime(d.newestAt)}</td>
        </tr>`,
    ),
    empty: 'No dead letters waiting.',
  });
}

function activityTables(view: View, status: StoreStatus): Html {
  const consumers = dataTable({
    id: 'consumer-status',
    heads: ['Consumer or operation', 'Completed', 'Duplicates', 'Dead-lettered'],
    rows: status.consumers.map(
      (a) =>
        html`<tr>
          <td>${a.name}</td>
          <td class="n">${a.handledLastHour}</td>
          <td class="n">${a.duplicatesLastHour}</td>
          <td class="n">${a.deadLetteredLastHour}</td>
        </tr>`,
    ),
    empty: 'No activity in the last hour.',
  });
  const operations = dataTable({
    id: 'operation-status',
    heads: ['Operation', 'In progress', 'Past lease'],
    rows: status.operations.map(
      (o) =>
        html`<tr>
          <td>
            <a href="${href(view, `/operations?operation=${encodeURIComponent(o.operation)}`)}"
              >${o.operation}</a
            >
          </td>
          <td class="n">${o.inProgress}</td>
          <td class="n">${o.pastLease}</td>
        </tr>`,
    ),
    empty: 'Nothing in progress.',
  });
  const { retention: backlog } = status;
  const retention = fieldTable(
    'retention-status',
    [
      ['Expired dedup records', backlogFigure(backlog.expiredDedupRecords, backlog.countLimit)],
      [
        'Published outbox rows kept',
        backlogFigure(backlog.publishedOutboxRows, backlog.countLimit),
      ],
    ],
    { numeric: true },
  );
  return html`<h2>Handled in the last hour</h2>
    ${consumers}
    <h2>Operations in progress</h2>
    ${operations}
    <h2>Retention backlog</h2>
    ${retention}`;
}

function overview(view: View, status: StoreStatus, deps: Deps): Html {
  const samples = deps.sampler.samples();
  const samplingError = deps.sampler.lastError;
  return html`<p class="muted">
      Schema <code>${status.schema}</code>, read at ${formatTime(status.at)} (database clock).
    </p>
    <h2>Last hour</h2>
    ${statusChart(samples, status.at)}
    ${samplingError === undefined ? '' : html`<p class="warn">The last sample failed: ${samplingError}</p>`}
    <h2>Outbox by destination</h2>
    ${outboxStatusTable(view, status.outbox)}
    <h2>Dead letters waiting</h2>
    ${deadLetterTable(view, status)} ${activityTables(view, status)} ${loadSheddingPanel(status)}
    ${replicationSlotsPanel(status.slots, deps.options.slotLagWarningBytes)}`;
}

/** `/`: the status figures and the chart of the last hour. */
export function registerOverviewPage(app: App, deps: Deps): void {
  app.get('/', async (c) => {
    const status = await deps.options.admin.status();
    // A page load is a sample too: the chart ends at what the tables show.
    deps.sampler.record(sampleOf(status));
    const view = viewOf(c, deps);
    return c.html(layout(view, 'Overview', overview(view, status, deps)));
  });
}
