/**
 * What both sides of `pnpm bench orders` share: the services they run against, the names of
 * one run (fresh schemas, topic, queue and group), the fake provider, the HTTP client that
 * fires the orders, and the timing of one run from the first request to the last shipment.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type RequestListener, type Server } from 'node:http';
import type { Channel } from 'amqplib';
import type { Admin } from 'kafkajs';
import type { Knex } from 'knex';
import { memoryLedger } from '../examples/order-service/provider/ledger';
import { createProviderServer } from '../examples/order-service/provider/server';
import type { NewOrder } from '../examples/order-service/orders/contract';
import { costMeter, percentile, reached, type Run } from './_support';

/** Partitions of the `order.created` topic, as the example's orchestrator creates it. */
const PARTITIONS = 4;

/** The services and clients a run uses, connected once for the whole benchmark. */
export interface BenchEnv {
  readonly databaseUrl: string;
  readonly kafkaBrokers: string[];
  readonly amqpUrl: string;
  /** The fake provider both sides charge through. */
  readonly providerUrl: string;
  /** For creating and deleting topics and groups. */
  readonly admin: Admin;
  /** For declaring and deleting queues. */
  readonly channel: Channel;
  /** For creating and dropping schemas. */
  readonly db: Knex;
}

/** The names of one run: nothing is shared between runs. */
export interface FlowNames {
  readonly schemas: {
    readonly orders: string;
    readonly payments: string;
    readonly shipping: string;
  };
  /** The Kafka topic of `order.created`. */
  readonly topic: string;
  /** The RabbitMQ queue of `payment.captured`. */
  readonly queue: string;
  /** The payments consumer group. */
  readonly group: string;
}

/** One side's running services. */
export interface Flow {
  /** Where its orders API listens. */
  readonly baseUrl: string;
  /** When each order's shipment row was committed (`performance.now()`), by order id. */
  readonly shipped: Map<string, number>;
  stop(): Promise<void>;
}

/** Starts one side's services on `names` (created beforehand, empty). */
export type StartFlow = (env: BenchEnv, names: FlowNames) => Promise<Flow>;

/** How a side starts each of its three services on the names of a run. */
export interface SideServices {
  /** Starts shipping, noting in `shipped` when each order's shipment row was committed. */
  shipping(shipped: Map<string, number>): Promise<() => Promise<void>>;
  payments(): Promise<() => Promise<void>>;
  orders(): Promise<{ url: string; stop(): Promise<void> }>;
}

/**
 * Starts a side's services from the end of the flow back (shipping, payments, then the
 * orders API), so each consumer is up before anything is sent to it; stops them the other
 * way round.
 */
export async function startFlow(services: SideServices): Promise<Flow> {
  const shipped = new Map<string, number>();
  const stopShipping = await services.shipping(shipped);
  const stopPayments = await services.payments();
  const orders = await services.orders();
  return {
    baseUrl: orders.url,
    shipped,
    stop: async () => {
      await orders.stop();
      await stopPayments();
      await stopShipping();
    },
  };
}

/** What the load is: orders timed, orders sent first untimed, requests in flight. */
export interface Load {
  readonly orders: number;
  readonly warmup: number;
  readonly concurrency: number;
}

/** One timed run: orders per second end to end, with the request-to-shipment latencies. */
export interface FlowRun extends Run {
  readonly p50Ms: number;
  readonly p99Ms: number;
}

/**
 * Starts the fake payment provider on an ephemeral port, set never to fail and never to be
 * slow, with its books in memory.
 */
export async function startProvider(): Promise<{ url: string; server: Server }> {
  const server = createProviderServer({
    ledger: memoryLedger(),
    random: () => 1,
    failRate: 0,
    slowRate: 0,
    slowMs: 0,
  });
  return { url: await listen(server), server };
}

/** Listens on an ephemeral port of 127.0.0.1 and resolves to the server's URL. */
export async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('not a TCP server');
  return `http://127.0.0.1:${address.port}`;
}

/** Closes `server` and the connections the client keeps open to it. */
export function close(server: Server): Promise<void> {
  server.closeAllConnections();
  return new Promise((resolve) => server.close(() => resolve()));
}

/** Serves `app` (an Express app) on an ephemeral port. */
export async function serve(app: RequestListener): Promise<{ url: string; server: Server }> {
  const server = createServer(app);
  return { url: await listen(server), server };
}

/** Fresh names for one run. */
function freshNames(side: string): FlowNames {
  const tag = `${side}_${randomBytes(4).toString('hex')}`;
  return {
    schemas: {
      orders: `bench_orders_${tag}`,
      payments: `bench_payments_${tag}`,
      shipping: `bench_shipping_${tag}`,
    },
    topic: `bench.order.created.${tag}`,
    queue: `bench.payment.captured.${tag}`,
    group: `bench-payments-${tag}`,
  };
}

/**
 * Creates the topic (waiting for its leaders) and declares the queue as the shipping consumer
 * declares it, so the payments side can publish before shipping starts.
 */
async function createChannels(env: BenchEnv, names: FlowNames): Promise<void> {
  await env.admin.createTopics({
    waitForLeaders: true,
    topics: [{ topic: names.topic, numPartitions: PARTITIONS, replicationFactor: 1 }],
  });
  await env.channel.assertQueue(names.queue, { durable: true });
}

/** Deletes what a run created: the schemas, the topics, the group and the queues. */
async function removeAll(env: BenchEnv, names: FlowNames): Promise<void> {
  for (const schema of Object.values(names.schemas)) {
    await env.db.raw(`drop schema if exists "${schema}" cascade`);
  }
  const topics = await env.admin.listTopics();
  const ours = [names.topic, `${names.topic}.dlq`].filter((t) => topics.includes(t));
  if (ours.length > 0) await env.admin.deleteTopics({ topics: ours });
  await env.admin.deleteGroups([names.group]).catch(() => undefined);
  // The shipping consumer's retry and dead-letter topology, where it declared one.
  const queue = names.queue;
  for (const name of [queue, `${queue}.dead`, `${queue}.retry.200ms`, `${queue}.retry.1000ms`]) {
    await env.channel.deleteQueue(name);
  }
  await env.channel.deleteExchange(`${queue}.dlx`);
}

/** The body of the n-th order. */
function orderBody(n: number): NewOrder {
  return { customerId: `cust-${n % 500}`, amountCents: 100 + n, currency: 'EUR' };
}

/**
 * Posts `count` orders to `baseUrl`, `concurrency` at a time, each under its own
 * Idempotency-Key; resolves to when each was sent (`performance.now()`), by the order id the
 * API answered, once every order was answered 201.
 */
async function fireOrders(
  baseUrl: string,
  count: number,
  concurrency: number,
  keyPrefix: string,
): Promise<Map<string, number>> {
  const sentAt = new Map<string, number>();
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < count) {
      const n = next++;
      const sent = performance.now();
      const response = await fetch(`${baseUrl}/orders`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'idempotency-key': `${keyPrefix}-${n}` },
        body: JSON.stringify(orderBody(n)),
      });
      const body = await response.text();
      if (response.status !== 201) {
        throw new Error(`POST /orders answered ${response.status}: ${body}`);
      }
      sentAt.set((JSON.parse(body) as { orderId: string }).orderId, sent);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return sentAt;
}

/**
 * One run of one side on fresh names: starts its services, sends `load.warmup` orders and
 * waits for their shipments (the consumer group is joined, the pools and connections are
 * open), then times `load.orders` orders from the first request to the last shipment. The
 * services are stopped and everything the run created is deleted after.
 */
export async function runFlow(
  env: BenchEnv,
  side: string,
  start: StartFlow,
  load: Load,
): Promise<FlowRun> {
  const names = freshNames(side);
  let flow: Flow | undefined;
  try {
    await createChannels(env, names);
    flow = await start(env, names);
    const { shipped } = flow;
    await fireOrders(flow.baseUrl, load.warmup, load.concurrency, `${names.group}-warm`);
    await reached(() => shipped.size, load.warmup);
    const cpu = costMeter();
    const started = performance.now();
    const sentAt = await fireOrders(flow.baseUrl, load.orders, load.concurrency, names.group);
    await reached(() => shipped.size, load.warmup + load.orders);
    const used = cpu(load.orders);
    const latencies: number[] = [];
    let last = started;
    for (const [orderId, sent] of sentAt) {
      const at = shipped.get(orderId);
      if (at === undefined) throw new Error(`order ${orderId} was not shipped`);
      latencies.push(at - sent);
      last = Math.max(last, at);
    }
    return {
      perSec: load.orders / ((last - started) / 1000),
      p50Ms: percentile(latencies, 50),
      p99Ms: percentile(latencies, 99),
      ...used,
    };
  } finally {
    await flow?.stop();
    await removeAll(env, names);
  }
}
