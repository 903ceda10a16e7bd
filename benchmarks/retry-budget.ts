/**
 * `pnpm bench retry-budget`: what a downstream outage costs in handler calls, with and without
 * a consumer's `resilience` option, in one process and one run.
 *
 * Each side: one memory-broker consumer (concurrency 8) with a real inbox on PostgreSQL
 * (`DATABASE_URL`), `COUNT` messages sent at once, and a handler whose downstream fails every
 * call (an unclassified error: transient) for the first `OUTAGE_MS` after the first call,
 * then succeeds. Every side uses the same inbox settings (maxAttempts 10, backoff 50–1 000 ms).
 * - `no resilience`: the baseline; each failure is redelivered after the inbox's backoff;
 * - `budget`: `resilience: { budget: { minRetriesPerSecond: 1, windowMs: 2_000,
 *   spentDelayMs: OUTAGE_MS }, breaker: false }`: retries over the budget take the slow path;
 * - `budget + breaker`: the same budget and a breaker (5 failures in a row, open 500 ms).
 * It prints, per side, the handler calls during the outage (and how many of them were retries,
 * not a message's first attempt) and in all, the dead letters, the messages handled, and the
 * time until every message was settled for good; each ratio is the side's count ÷ the
 * baseline's. `BENCH_RETRY_BUDGET_COUNT` sets the
 * messages (default 200), `BENCH_RETRY_BUDGET_OUTAGE_MS` the outage (default 3 000).
 */
import { randomBytes } from 'node:crypto';
import { createInbox, createStore, type ResilienceOptions, type Store } from '@justonce/core';
import type { Envelope } from '@justonce/core/transport';
import { createMemoryBroker } from '@justonce/core/testing';
import { printTable } from './_support';

const COUNT = Number(process.env.BENCH_RETRY_BUDGET_COUNT ?? 200);
const OUTAGE_MS = Number(process.env.BENCH_RETRY_BUDGET_OUTAGE_MS ?? 3_000);
const BUDGET = { minRetriesPerSecond: 1, windowMs: 2_000, spentDelayMs: OUTAGE_MS };

interface Side {
  readonly name: string;
  readonly resilience: ResilienceOptions<Envelope> | undefined;
}

const SIDES: readonly Side[] = [
  { name: 'no resilience', resilience: undefined },
  { name: 'budget', resilience: { budget: BUDGET, breaker: false } },
  {
    name: 'budget + breaker',
    resilience: { budget: BUDGET, breaker: { trip: { consecutiveFailures: 5 }, openMs: 500 } },
  },
];

interface Result {
  readonly side: string;
  readonly callsInOutage: number;
  /** Calls during the outage that were not a message's first attempt. */
  readonly retriesInOutage: number;
  readonly calls: number;
  readonly deadLettered: number;
  readonly handled: number;
  readonly settledMs: number;
}

async function runSide(store: Store, side: Side, index: number): Promise<Result> {
  const broker = createMemoryBroker();
  const inbox = createInbox({
    store,
    consumer: `bench-retry-budget-${index}-${randomBytes(3).toString('hex')}`,
    maxAttempts: 10,
    backoff: { baseMs: 50, capMs: 1_000 },
  });
  let firstCallAt: number | undefined;
  let calls = 0;
  let callsInOutage = 0;
  let retriesInOutage = 0;
  let handled = 0;
  const consumer = broker.consume('work', {
    inbox,
    concurrency: 8,
    handler: async (ctx) => {
      calls += 1;
      firstCallAt ??= Date.now();
      if (Date.now() - firstCallAt < OUTAGE_MS) {
        callsInOutage += 1;
        if (ctx.attempt > 1) retriesInOutage += 1;
        throw new Error('the downstream is down');
      }
      handled += 1;
    },
    ...(side.resilience === undefined ? {} : { resilience: side.resilience }),
  });
  await consumer.start();
  const started = Date.now();
  broker.send(
    'work',
    Array.from({ length: COUNT }, (_, i) => ({ id: `m-${i}`, body: `message ${i}` })),
  );
  await broker.whenIdle({ timeoutMs: 120_000 });
  const settledMs = Date.now() - started;
  await broker.close();
  return {
    side: side.name,
    callsInOutage,
    retriesInOutage,
    calls,
    deadLettered: broker.deadLetters('work').length,
    handled,
    settledMs,
  };
}

export async function main(): Promise<void> {
  const url = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
  const schema = `bench_retry_budget_${randomBytes(4).toString('hex')}`;
  const store = await createStore({ connectionString: url, schema });
  try {
    await store.migrate();
    const results: Result[] = [];
    for (const [i, side] of SIDES.entries()) results.push(await runSide(store, side, i));
    const baseline = results[0] as Result;
    console.log(
      `${COUNT} messages, the downstream down for ${OUTAGE_MS} ms from the first call; concurrency 8`,
    );
    printTable(
      [
        'side',
        'calls in outage',
        'ratio',
        'retries in outage',
        'ratio',
        'calls',
        'dead-lettered',
        'handled',
        'settled in',
      ],
      results.map((r) => [
        r.side,
        String(r.callsInOutage),
        (r.callsInOutage / baseline.callsInOutage).toFixed(3),
        String(r.retriesInOutage),
        (r.retriesInOutage / baseline.retriesInOutage).toFixed(3),
        String(r.calls),
        String(r.deadLettered),
        String(r.handled),
        `${(r.settledMs / 1000).toFixed(1)} s`,
      ]),
    );
    console.log(
      JSON.stringify({
        bench: 'retry-budget',
        count: COUNT,
        outageMs: OUTAGE_MS,
        results: results.map((r) => ({
          ...r,
          ratio: r.callsInOutage / baseline.callsInOutage,
          retryRatio: r.retriesInOutage / baseline.retriesInOutage,
        })),
      }),
    );
  } finally {
    await store.knex.raw(`drop schema if exists "${schema}" cascade`);
    await store.close();
  }
}
