/** A run's figures as one boxed table, followed by its checks and a verdict. */
import type { FlowReport } from './checks';

const number = new Intl.NumberFormat('en-US');
const seconds = (ms: number): string => `${(ms / 1000).toFixed(2)} s`;
const millis = (ms: number): string => `${Math.round(ms)} ms`;

type Row = readonly string[];

/** Label and value rows, in a table of four columns. */
function pairs(rows: readonly (readonly [string, string])[]): Row[] {
  return rows.map(([label, value]) => [label, value, '', '']);
}

function box(header: Row, sections: readonly (readonly Row[])[]): string[] {
  const columns = header.length;
  const all = [header, ...sections.flat()];
  const widths = Array.from({ length: columns }, (_, c) =>
    Math.max(...all.map((row) => (row[c] ?? '').length)),
  );
  const rule = (l: string, m: string, r: string): string =>
    l + widths.map((w) => '─'.repeat(w + 2)).join(m) + r;
  const line = (row: Row): string =>
    '│' +
    widths
      .map((w, c) => ` ${c === 0 ? (row[c] ?? '').padEnd(w) : (row[c] ?? '').padStart(w)} `)
      .join('│') +
    '│';
  const lines = [rule('┌', '┬', '┐'), line(header)];
  for (const section of sections) {
    lines.push(rule('├', '┼', '┤'));
    for (const row of section) lines.push(line(row));
  }
  lines.push(rule('└', '┴', '┘'));
  return lines;
}

/** Formats `report` for a terminal. */
export function formatReport(report: FlowReport): string {
  const { ledgers, provider, latency } = report.outcome;
  const { stats } = report.load;
  const accepted = report.load.accepted.length;
  const ledger = (label: string, t: { rows: number; doubles: number; lost: number }): Row => [
    label,
    number.format(t.rows),
    number.format(t.doubles),
    number.format(t.lost),
  ];
  const sections: Row[][] = [
    [
      ['orders accepted (201 at the client)', number.format(accepted), '', ''],
      ledger('orders', ledgers.orders),
      ledger('order.created events', ledgers.events),
      ledger('payments', ledgers.payments),
      ledger('provider charges', ledgers.charges),
      ledger('shipments', ledgers.shipments),
    ],
    pairs([
      ['HTTP requests', number.format(stats.requests)],
      ['  retried with the same key', number.format(stats.retries)],
      ['  duplicates sent on purpose', number.format(report.load.duplicateRequests)],
      ['  answered as replays', number.format(stats.replayed)],
      [
        '  409 in progress / 5xx',
        `${number.format(stats.inProgress)} / ${number.format(stats.serverErrors)}`,
      ],
      [
        '  timed out / connection lost',
        `${number.format(stats.timeouts)} / ${number.format(stats.connectionErrors)}`,
      ],
      ['  422 key reused with another body', number.format(stats.conflicts)],
      ['provider calls', number.format(provider.calls)],
      [
        '  503 / answered too late',
        `${number.format(provider.unavailable)} / ${number.format(provider.slow)}`,
      ],
      ['  duplicate calls (same key)', number.format(provider.duplicateCalls)],
      ...report.faults,
    ]),
    pairs([
      ['wall time', seconds(report.wallMs)],
      ['orders/s', (accepted / (report.wallMs / 1000)).toFixed(1)],
      ['request → shipment p50', millis(latency.p50Ms)],
      ['request → shipment p99', millis(latency.p99Ms)],
      ...report.environment,
    ]),
  ];
  const lines = [report.title, ...box(['', 'count', 'doubles', 'lost'], sections)];
  for (const check of report.checks) lines.push(`${check.ok ? '✓' : '✗'} ${check.name}`);
  lines.push(
    report.ok
      ? 'OK: every order was created, charged and shipped exactly once.'
      : 'FAILED: an invariant did not hold (see ✗ above).',
  );
  return lines.join('\n');
}
