import type { CircuitState } from '../retry/circuit-breaker';
import { isMysql } from '../store/dialect';
import type { MigrationNames } from '../store/migration';
import { rowsOf } from '../store/rows';
import type { Store } from '../store/store';
import type { ConsumerResilience } from './types';

/**
 * After how many seconds without a report a consumer's load shedding is shown as stale:
 * a working consumer reports every 5 s (and for its breaker's `openMs` after its last
 * delivery, which a transport holding deliveries retries within); an idle, stopped
 * or cut-off one stops.
 */
export const RESILIENCE_STALE_SECONDS = 30;

/** Most rows read: consumers write at most 20 keys each and forget keys after an hour. */
const MAX_ROWS = 5_000;

/**
 * The read of `consumer_resilience`: the reports of the last day (a consumer gone for good
 * shows stale for a day, then no more). Not one of `statusQueries`, whose every figure reads a
 * large table through an index: this table holds a few rows per consumer, read whole.
 */
function resilienceQuery(names: MigrationNames): string {
  const mysql = isMysql(names);
  const age = mysql
    ? 'timestampdiff(microsecond, reported_at, current_timestamp(6)) / 1e6'
    : 'extract(epoch from now() - reported_at)::float8';
  const dayAgo = mysql ? 'current_timestamp(6) - interval 1 day' : "now() - interval '1 day'";
  return `select consumer, breaker_key, state, state_since, budget_remaining, window_ms,
      first_deliveries, retries_paid, retries_shed, breaker_sheds, reported_at,
      ${age} as age_seconds
    from ${names.table('consumer_resilience')}
    where reported_at > ${dayAgo}
    order by consumer, breaker_key
    limit ${MAX_ROWS}`;
}

type Count = string | number;

interface ResilienceRow {
  consumer: string;
  breaker_key: string;
  state: string | null;
  state_since: Date | string | null;
  budget_remaining: Count | null;
  window_ms: Count;
  first_deliveries: Count;
  retries_paid: Count;
  retries_shed: Count;
  breaker_sheds: Count;
  reported_at: Date | string;
  age_seconds: Count;
}

/**
 * One entry per consumer from its newest report: the keys reported with it (a key older than
 * the stale limit before the newest report is one the consumer no longer tracks), the budget's
 * figures of the newest row.
 */
function consumerOf(rows: readonly ResilienceRow[]): ConsumerResilience {
  const newest = rows.reduce((a, b) => (Number(b.age_seconds) < Number(a.age_seconds) ? b : a));
  const newestAge = Number(newest.age_seconds);
  const current = rows.filter((r) => Number(r.age_seconds) - newestAge <= RESILIENCE_STALE_SECONDS);
  return {
    consumer: newest.consumer,
    reportedAt: new Date(newest.reported_at),
    stale: newestAge > RESILIENCE_STALE_SECONDS,
    budgetRemaining: newest.budget_remaining === null ? null : Number(newest.budget_remaining),
    window: {
      windowMs: Number(newest.window_ms),
      firstDeliveries: Number(newest.first_deliveries),
      retriesPaid: Number(newest.retries_paid),
      retriesShed: Number(newest.retries_shed),
      breakerSheds: Number(newest.breaker_sheds),
    },
    breakers: current.flatMap((r) =>
      r.state === null
        ? []
        : [
            {
              key: r.breaker_key,
              state: r.state as CircuitState,
              since: new Date(r.state_since ?? r.reported_at),
            },
          ],
    ),
  };
}

/** The load shedding every consumer reported, sorted by consumer. @internal */
export async function readResilience(store: Store): Promise<ConsumerResilience[]> {
  const rows = rowsOf<ResilienceRow>(await store.knex.raw(resilienceQuery(store.names)));
  const byConsumer = new Map<string, ResilienceRow[]>();
  for (const row of rows) {
    const list = byConsumer.get(row.consumer) ?? [];
    list.push(row);
    byConsumer.set(row.consumer, list);
  }
  return [...byConsumer.values()].map(consumerOf);
}

/** A span of seconds as `status` shows it: `45 s`, `2 m 5 s`, `3 h 2 m`. */
function span(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} m ${s % 60} s`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} m`;
}

/**
 * The rows of a consumer's load shedding as the CLI and the dashboard show them, one per
 * breaker key (one `—` row without a breaker): consumer, key, state (`… (stale)` when it
 * has not reported for a while), for how long, the budget over its window, the sheds.
 * `at` is the read's time (`StoreStatus.at`).
 */
export function resilienceRows(c: ConsumerResilience, at: Date): string[][] {
  const window = `${span(c.window.windowMs / 1000)} window`;
  const budget =
    c.budgetRemaining === null
      ? 'no budget'
      : `${c.window.retriesPaid} spent, ${c.budgetRemaining} left (${window})`;
  const sheds = c.window.breakerSheds + c.window.retriesShed;
  const shed = `${sheds} (breaker ${c.window.breakerSheds}, budget ${c.window.retriesShed})`;
  const stale = c.stale
    ? ` (stale: last report ${span((at.getTime() - c.reportedAt.getTime()) / 1000)} ago)`
    : '';
  if (c.breakers.length === 0) return [[c.consumer, '—', `no breaker${stale}`, '—', budget, shed]];
  return c.breakers.map((b) => [
    c.consumer,
    b.key,
    `${b.state}${stale}`,
    span((at.getTime() - b.since.getTime()) / 1000),
    budget,
    shed,
  ]);
}

/** The column heads of {@link resilienceRows}. */
export const RESILIENCE_HEAD: readonly string[] = [
  'consumer',
  'breaker key',
  'state',
  'for',
  'retry budget',
  'shed',
];
