/**
 * The load and the checks of the fault tests that the consumer contract's `restart` and
 * `partition` clauses do not play (Kafka restarted with its data gone, in kafka's
 * `broker-restart.test.ts`): events added through the outbox at a steady rate, a relay
 * publishing them, a transport's consumer handling them through the inbox into a business
 * table; then zero lost, zero doubled, nothing dead, and how long recovery took. The contract
 * plays the same scenario on its own store (`packages/core/src/testing/consumer-contract-load.ts`),
 * since `@justonce/core/testing` ships and cannot import this folder.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import {
  createDeadLetters,
  createOutbox,
  createRelay,
  type Handler,
  type Publisher,
  type Relay,
} from '@justonce/core';
import { openTestStore } from '../packages/core/test/db';
import { waitFor } from './wait-for';

/** A store on the shared PostgreSQL with a `handled` business table. */
export type LoadStore = Awaited<ReturnType<typeof openTestStore>> & {
  readonly handledTable: string;
};

/** Opens a store in a schema of its own with a `handled` table that shows doubles. */
export async function openLoadStore(): Promise<LoadStore> {
  const store = await openTestStore('postgres');
  const handledTable = `${store.names.schema}."handled"`;
  // No unique constraint on purpose: a second effect of one event must be visible, not refused.
  await store.knex.raw(
    `create table ${handledTable} (seq bigserial primary key, event_no int not null, message_id text not null)`,
  );
  return Object.assign(store, { handledTable });
}

/** Times of the load's milestones (ms since the epoch), shared by relay, consumer and test. */
export interface LoadClock {
  /** Each message the broker accepted, and when the publish call came back. */
  readonly published: Array<{ at: number; messageId: string }>;
  /** Each handler call (its transaction may still roll back), and when it ran. */
  readonly handled: Array<{ at: number; messageId: string }>;
}

/** A clock with nothing noted yet. */
export function newClock(): LoadClock {
  return { published: [], handled: [] };
}

/** Wraps a publisher so that every accepted message notes its time in `clock.published`. */
export function timedPublisher(inner: Publisher, clock: LoadClock): Publisher {
  return {
    async publish(messages) {
      const results = await inner.publish(messages);
      const at = Date.now();
      for (const result of results) {
        if (result.ok) clock.published.push({ at, messageId: result.messageId });
      }
      return results;
    },
    close: () => inner.close(),
  };
}

/** The handler of the load: one business row per event, in the inbox's transaction. */
export function loadHandler(store: LoadStore, clock: LoadClock): Handler {
  return async (ctx) => {
    clock.handled.push({ at: Date.now(), messageId: ctx.messageId });
    const { n } = ctx.payload as { n: number };
    await ctx.trx.raw(`insert into ${store.handledTable} (event_no, message_id) values (?, ?)`, [
      n,
      ctx.messageId,
    ]);
  };
}

/** Decodes the load's JSON bodies. */
export function decodeLoad(body: string | Uint8Array): { n: number } {
  return JSON.parse(typeof body === 'string' ? body : Buffer.from(body).toString()) as {
    n: number;
  };
}

/** A relay with the defaults a user gets, events kept once published (for the checks). */
export function loadRelay(store: LoadStore, publisher: Publisher): Relay {
  return createRelay({ store, publisher, onPublished: 'keep', pollIntervalMs: 200 });
}

/**
 * Adds `total` events to `destination`, one transaction each, spread evenly over `spanMs`.
 * Resolves with their message ids once all are added.
 */
export async function feed(
  store: LoadStore,
  destination: string,
  total: number,
  spanMs: number,
): Promise<string[]> {
  const outbox = createOutbox({ store });
  const ids: string[] = [];
  const started = Date.now();
  for (let n = 0; n < total; n++) {
    const due = started + (n * spanMs) / total;
    if (due > Date.now()) await sleep(due - Date.now());
    const [id] = await store.knex.transaction((trx) =>
      outbox.add(trx, { destination, key: `k${n % 8}`, payload: { n } }),
    );
    ids.push(id!);
  }
  return ids;
}

/** What the checks found. */
export interface LoadOutcome {
  events: number;
  handled: number;
  lost: number;
  doubled: number;
  dead: number;
  deadLetters: number;
}

/** Waits until every event was handled (bounded), then counts losses, doubles and deaths. */
export async function settle(
  store: LoadStore,
  total: number,
  timeoutMs: number,
): Promise<LoadOutcome> {
  const distinct = async () =>
    Number(
      (
        (await store.knex.raw(
          `select count(distinct event_no)::int as n from ${store.handledTable}`,
        )) as {
          rows: Array<{ n: number }>;
        }
      ).rows[0]!.n,
    );
  const pending = async () =>
    Number(
      (
        (await store.knex.raw(
          `select count(*)::int as n from ${store.names.table('outbox')} where status = 'pending'`,
        )) as { rows: Array<{ n: number }> }
      ).rows[0]!.n,
    );
  // Done when all are handled, or when nothing is left to publish and nothing new was handled
  // for a while (events lost by the broker never come): no need to wait out the bound then.
  let last = -1;
  let since = Date.now();
  await waitFor(
    `all ${total} events handled`,
    async () => {
      const now = await distinct();
      if (now >= total) return true;
      if (now !== last) [last, since] = [now, Date.now()];
      return Date.now() - since > 8000 && (await pending()) === 0;
    },
    { timeoutMs, intervalMs: 250 },
  ).catch(() => undefined);
  // A moment for late duplicates (a redelivery in flight) to show.
  await sleep(1500);
  const counts = (await store.knex.raw(
    `select event_no, count(*)::int as n from ${store.handledTable} group by event_no`,
  )) as { rows: Array<{ event_no: number; n: number }> };
  const dead = (await store.knex.raw(
    `select count(*)::int as n from ${store.names.table('outbox')} where status = 'dead'`,
  )) as { rows: Array<{ n: number }> };
  const seen = new Set(counts.rows.map((row) => row.event_no));
  let lost = 0;
  for (let n = 0; n < total; n++) if (!seen.has(n)) lost++;
  return {
    events: total,
    handled: counts.rows.reduce((sum, row) => sum + row.n, 0),
    lost,
    doubled: counts.rows.filter((row) => row.n > 1).length,
    dead: dead.rows[0]!.n,
    deadLetters: (await createDeadLetters(store).list()).length,
  };
}

/** Milliseconds from `answeredAt` to the first publish and the first handling after it. */
export function recoveryAfter(
  clock: LoadClock,
  answeredAt: number,
): { firstPublishMs: number | null; firstHandledMs: number | null } {
  const first = (marks: ReadonlyArray<{ at: number }>) => {
    const after = marks.map((mark) => mark.at).filter((at) => at >= answeredAt);
    return after.length > 0 ? Math.min(...after) - answeredAt : null;
  };
  return { firstPublishMs: first(clock.published), firstHandledMs: first(clock.handled) };
}

/** Runs cleanup steps in reverse order, each even if an earlier one failed. */
export async function runCleanup(steps: Array<() => Promise<unknown>>): Promise<void> {
  for (const step of steps.reverse()) await step().catch(() => undefined);
}
