/**
 * `pnpm bench orders`: the order-service example's whole flow, end to end, beside the same
 * flow written by hand without any guarantee, in one process and one run, against the real
 * PostgreSQL, Kafka and RabbitMQ.
 *
 * - justonce (_orders-justonce.ts): the example's three services, started by the functions
 *   their processes call (`start…Service`): the orders app (Express, `Idempotency-Key`, the
 *   order and its `order.created` in one transaction through the outbox), a relay to Kafka,
 *   the payments handler (Kafka consumer through its inbox, the charge as an operation,
 *   `payment.captured` through the handler's outbox), a relay to RabbitMQ, and the shipping
 *   handler (RabbitMQ consumer through its inbox).
 * - hand-written (_orders-hand.ts): the same three services with plain Express, kafkajs and
 *   amqplib: insert then send, consume then charge, insert and publish with a confirm,
 *   consume then insert. No idempotency record, no outbox, no inbox.
 *
 * Both sides call the same fake provider (in this process, never failing, never slow) and
 * write the example's tables. A run starts a side's services on fresh schemas, a fresh topic
 * (4 partitions), queue and group, sends BENCH_ORDERS_WARMUP orders (default 50) and waits
 * for their shipments (so the group is joined and the pools are open), then times
 * BENCH_ORDERS orders (default 1 000) posted with fetch, BENCH_ORDERS_CONCURRENCY at a time
 * (default 32): orders per second from the first request to the last shipment row committed,
 * and the p50 and p99 of each order's time from its request to its shipment. A warm-up run of
 * each side first, then BENCH_ROUNDS rounds (default 6) alternating which side goes first;
 * rates, latencies and CPU figures are medians over the rounds, `ratio` the median of the
 * rounds' ratios (justonce ÷ hand-written). The table and the JSON line give each side's
 * cost per order (_support.ts, costMeter): this process's CPU (all six services run in it),
 * PostgreSQL's CPU, and the statements sent through node-postgres. The last line printed is
 * the JSON result.
 */
import { connect } from 'amqplib';
import { Kafka, logLevel } from 'kafkajs';
import createKnex from 'knex';
import { ensureServices } from '../test-support/services';
import {
  runFlow,
  startProvider,
  close,
  type BenchEnv,
  type FlowRun,
  type Load,
  type StartFlow,
} from './_orders-flow';
import { startHandFlow } from './_orders-hand';
import { startJustonceFlow } from './_orders-justonce';
import {
  benchRounds,
  costCells,
  costHeads,
  measureCase,
  median,
  printTable,
  type Cost,
} from './_support';

function positive(name: string, fallback: number): number {
  const value = Number(process.env[name] ?? fallback);
  if (!Number.isInteger(value) || value < 1) throw new Error(`${name} must be a positive integer`);
  return value;
}

/** The latencies of each run of a side, in the order the runs happened. */
type Latencies = Array<Pick<FlowRun, 'p50Ms' | 'p99Ms'>>;

/** A side as `measureCase` runs it, noting each run's latencies in `into`. */
function side(env: BenchEnv, name: string, start: StartFlow, load: Load, into: Latencies) {
  return async (): Promise<FlowRun> => {
    const run = await runFlow(env, name, start, load);
    into.push({ p50Ms: run.p50Ms, p99Ms: run.p99Ms });
    return run;
  };
}

/** Median p50 and p99 of the timed rounds (the first run of each side was the warm-up). */
function medianLatency(runs: Latencies): { p50Ms: number; p99Ms: number } {
  const rounds = runs.slice(1);
  const round = (ms: number): number => Math.round(ms * 10) / 10;
  return {
    p50Ms: round(median(rounds.map((r) => r.p50Ms))),
    p99Ms: round(median(rounds.map((r) => r.p99Ms))),
  };
}

/** Connects the clients a run needs for its topics, queues and schemas; `close` ends them. */
async function connectEnv(providerUrl: string): Promise<{ env: BenchEnv; close(): Promise<void> }> {
  const { databaseUrl, kafkaBrokers, amqpUrl } = await ensureServices([
    'postgres',
    'kafka',
    'rabbitmq',
  ]);
  const kafka = new Kafka({
    clientId: 'bench-orders',
    brokers: kafkaBrokers,
    logLevel: logLevel.NOTHING,
  });
  const admin = kafka.admin();
  await admin.connect();
  const amqp = await connect(amqpUrl);
  const channel = await amqp.createChannel();
  const db = createKnex({ client: 'pg', connection: databaseUrl, pool: { min: 0, max: 2 } });
  return {
    env: { databaseUrl, kafkaBrokers, amqpUrl, providerUrl, admin, channel, db },
    close: async () => {
      await admin.disconnect();
      await amqp.close();
      await db.destroy();
    },
  };
}

/** One side's line of the table. */
function row(
  name: string,
  r: { perSec: number; p50Ms: number; p99Ms: number; cost?: Cost },
): string[] {
  return [name, String(r.perSec), r.p50Ms.toFixed(0), r.p99Ms.toFixed(0), ...costCells(r.cost)];
}

/** Runs the case and prints the table, then the JSON line. */
export async function main(): Promise<void> {
  const load: Load = {
    orders: positive('BENCH_ORDERS', 1_000),
    warmup: positive('BENCH_ORDERS_WARMUP', 50),
    concurrency: positive('BENCH_ORDERS_CONCURRENCY', 32),
  };
  const provider = await startProvider();
  const { env, close: closeEnv } = await connectEnv(provider.url);
  try {
    const latencies = { justonce: [] as Latencies, hand: [] as Latencies };
    const result = await measureCase(
      'order-flow',
      benchRounds(),
      side(env, 'jo', startJustonceFlow, load, latencies.justonce),
      side(env, 'hand', startHandFlow, load, latencies.hand),
    );
    const justonce = {
      perSec: result.perSec,
      ...medianLatency(latencies.justonce),
      ...(result.cost ? { cost: result.cost } : {}),
    };
    const hand = {
      perSec: result.baselinePerSec,
      ...medianLatency(latencies.hand),
      ...(result.baselineCost ? { cost: result.baselineCost } : {}),
    };
    console.log(
      `\n${load.orders} orders, ${load.concurrency} requests in flight; medians of the rounds`,
    );
    printTable(
      ['side', 'orders/s', 'p50 ms', 'p99 ms', ...costHeads('order')],
      [row('justonce', justonce), row('hand-written', hand)],
    );
    console.log(`ratio (justonce / hand-written, median of the rounds' ratios): ${result.ratio}`);
    console.log(
      JSON.stringify({
        bench: 'orders',
        results: [
          {
            ...result,
            orders: load.orders,
            concurrency: load.concurrency,
            p50Ms: justonce.p50Ms,
            p99Ms: justonce.p99Ms,
            baselineP50Ms: hand.p50Ms,
            baselineP99Ms: hand.p99Ms,
          },
        ],
      }),
    );
  } finally {
    await closeEnv();
    await close(provider.server);
  }
}
