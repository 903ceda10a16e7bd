/**
 * `pnpm example:orders` as a function: sets up a run, starts the four services as processes,
 * sends the orders while killing the services and re-publishing messages, waits until the
 * flow settles, and reads the tables. It never throws for a broken invariant: the report's
 * `ok` and `checks` say whether the run held.
 */
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { seededRandom } from '@justonce/core/testing';
import { LOCAL, runNames, envOf, SERVICES, type ServiceConfig, type ServiceName } from '../config';
import { runLoad, type LoadResult } from '../load/run-load';
import { flowChecks, type FlowReport } from '../report/checks';
import { collectOutcome } from '../report/collect';
import { planKills, runChaos, type KillCounts } from './chaos';
import { prepareInfrastructure, type Infrastructure } from './infrastructure';
import { serviceProcesses, type ServiceProcesses } from './processes';
import { republishToKafka, republishToRabbit } from './redeliver';
import { shippedCount, waitUntilSettled } from './settle';

/** Options of {@link runOrderService}. */
export interface OrderServiceOptions {
  /** Orders to send. Default 2 000. */
  readonly orders?: number;
  /** Requests in flight at once. Default 32. */
  readonly concurrency?: number;
  /** Seed of every random choice. Default 2024. */
  readonly seed?: number;
  /** SIGKILLs of each service during the run. Default 2. */
  readonly killsPerService?: number;
  /** The services the SIGKILLs hit. Default all four. */
  readonly killed?: readonly ServiceName[];
  /**
   * The orders service's process entry (absolute path): a file that runs
   * `serviceMain('orders', …)` as orders/main.ts does, such as examples/nestjs-orders/main.ts.
   * Default orders/main.ts.
   */
  readonly ordersEntry?: string;
  /** Share of the published messages sent again, twice in the run. Default 0.03. */
  readonly republishRate?: number;
  /** Longest wait for the flow to settle after the load, in milliseconds. Default 180 000. */
  readonly settleTimeoutMs?: number;
  /** Where the services are; default the environment, else the local ones. */
  readonly databaseUrl?: string;
  readonly kafkaBrokers?: readonly string[];
  readonly amqpUrl?: string;
  /** Keep the schemas, topic and queues for inspection. Default false. */
  readonly keep?: boolean;
  /** How far the run is. */
  readonly onProgress?: (progress: { accepted: number; shipped: number; total: number }) => void;
  /** One line per thing done to the services (a kill, a re-publish). */
  readonly onEvent?: (line: string) => void;
}

/** The report of a run of the example, with where its logs are. */
export interface OrderServiceReport extends FlowReport {
  readonly kills: KillCounts;
  readonly logDir: string;
  readonly run: string;
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  if (address === null || typeof address === 'string') throw new Error('no free port');
  return address.port;
}

async function configure(options: OrderServiceOptions): Promise<ServiceConfig> {
  return {
    names: runNames(`r${randomBytes(3).toString('hex')}`),
    databaseUrl: options.databaseUrl ?? (process.env.DATABASE_URL || LOCAL.databaseUrl),
    kafkaBrokers:
      options.kafkaBrokers ??
      (process.env.KAFKA_BROKERS || LOCAL.kafkaBrokers.join(',')).split(','),
    amqpUrl: options.amqpUrl ?? (process.env.AMQP_URL || LOCAL.amqpUrl),
    ordersPort: await freePort(),
    providerPort: await freePort(),
    seed: options.seed ?? 2024,
  };
}

interface Republished {
  kafka: number;
  rabbit: number;
}

async function republish(
  infra: Infrastructure,
  config: ServiceConfig,
  count: number,
  random: () => number,
  into: Republished,
): Promise<void> {
  const { orders, payments } = infra.stores;
  const { orderTopic, paymentQueue } = config.names;
  into.kafka += await republishToKafka(orders, infra.producer, orderTopic, count, random);
  into.rabbit += await republishToRabbit(payments, infra.channel, paymentQueue, count, random);
}

/** What the driving part of a run did. */
interface Driven {
  readonly load: LoadResult;
  readonly kills: KillCounts;
  readonly planned: number;
  readonly republished: Republished;
  readonly settled: boolean;
  readonly wallMs: number;
}

/**
 * Sends the orders while the SIGKILLs and the re-publishing run alongside, then waits until
 * the flow settles.
 */
async function drive(
  infra: Infrastructure,
  config: ServiceConfig,
  processes: ServiceProcesses,
  options: OrderServiceOptions,
  random: () => number,
): Promise<Driven> {
  const total = options.orders ?? 2_000;
  const settleTimeoutMs = options.settleTimeoutMs ?? 180_000;
  let accepted = 0;
  let shipped = 0;
  let loadDone = false;
  let polling = true;
  let givenUp = false;
  const progress = (): number => (accepted + shipped) / (2 * total);
  const report = () => options.onProgress?.({ accepted, shipped, total });
  const poller = (async () => {
    while (polling) {
      shipped = await shippedCount(infra.stores.shipping);
      report();
      await sleep(250);
    }
  })();
  // The background tasks are awaited below; until then a failure must not count as unhandled.
  poller.catch(() => undefined);
  try {
    const republished: Republished = { kafka: 0, rabbit: 0 };
    const perRound = Math.max(1, Math.round(total * (options.republishRate ?? 0.03)));
    const started = Date.now();
    const plan = planKills(options.killsPerService ?? 2, random, options.killed);
    const chaos = runChaos(
      plan,
      processes,
      progress,
      () => givenUp,
      (kill, readyMs) =>
        options.onEvent?.(
          `SIGKILL ${kill.service}: down ${kill.pauseMs} ms, then ready ${(readyMs / 1000).toFixed(1)} s after its restart`,
        ),
    );
    const midway = (async () => {
      while (progress() < 0.5 && !loadDone) await sleep(50);
      await republish(infra, config, perRound, random, republished);
    })();
    chaos.catch(() => undefined);
    midway.catch(() => undefined);
    const load = await runLoad({
      baseUrl: `http://127.0.0.1:${config.ordersPort}`,
      orders: total,
      concurrency: options.concurrency ?? 32,
      random,
      keyPrefix: config.names.run,
      onSettled: (n) => {
        accepted = n;
        report();
      },
    });
    loadDone = true;
    const giveUp = setTimeout(() => (givenUp = true), settleTimeoutMs);
    const kills = await chaos;
    clearTimeout(giveUp);
    await midway;
    await republish(infra, config, perRound, random, republished);
    options.onEvent?.(
      `re-published ${republished.kafka} to Kafka, ${republished.rabbit} to RabbitMQ`,
    );
    const settled = await waitUntilSettled(
      infra,
      config.names,
      load.accepted.length,
      settleTimeoutMs,
    );
    const wallMs = Date.now() - started;
    shipped = await shippedCount(infra.stores.shipping);
    report();
    return { load, kills, planned: plan.length, republished, settled, wallMs };
  } finally {
    polling = false;
    await poller;
  }
}

/** Runs the example end to end; see the module comment. */
export async function runOrderService(
  options: OrderServiceOptions = {},
): Promise<OrderServiceReport> {
  const total = options.orders ?? 2_000;
  const random = seededRandom(options.seed ?? 2024);
  const config = await configure(options);
  const { names } = config;
  const logDir = path.join(tmpdir(), `justonce-order-service-${names.run}`);
  const setupStarted = Date.now();
  const infra = await prepareInfrastructure(config);
  const entries = options.ordersEntry === undefined ? {} : { orders: options.ordersEntry };
  const processes = serviceProcesses(envOf(config), logDir, entries);
  try {
    await Promise.all(SERVICES.map((service) => processes.start(service)));
    const setupMs = Date.now() - setupStarted;
    const run = await drive(infra, config, processes, options, random);
    const { load, kills, republished } = run;
    const outcome = await collectOutcome(
      infra.stores,
      infra.ledger,
      load.accepted,
      names.orderTopic,
    );
    const unexpected = processes.unexpectedExits();
    await processes.stopAll();
    const database = infra.stores.orders.dialect === 'mysql' ? 'MySQL/MariaDB' : 'PostgreSQL';
    const ordersNote =
      options.ordersEntry === undefined
        ? ''
        : `, orders: ${path.relative(process.cwd(), options.ordersEntry)}`;
    const checks = flowChecks(total, load, outcome, run.settled, [
      {
        name: `every planned SIGKILL was carried out (${run.planned})`,
        ok: SERVICES.reduce((sum, s) => sum + kills[s], 0) === run.planned,
      },
      { name: 'no service exited unless killed', ok: SERVICES.every((s) => unexpected[s] === 0) },
    ]);
    return {
      title: `order service: 4 processes on ${database}, Kafka and RabbitMQ (run ${names.run}${ordersNote})`,
      orders: total,
      load,
      outcome,
      settled: run.settled,
      wallMs: run.wallMs,
      faults: [
        ['SIGKILLs (orders/payments/shipping/provider)', SERVICES.map((s) => kills[s]).join('/')],
        ['order.created re-published to Kafka', String(republished.kafka)],
        ['payment.captured re-published to RabbitMQ', String(republished.rabbit)],
      ],
      environment: [['setup: schemas, topic, 4 processes', `${(setupMs / 1000).toFixed(2)} s`]],
      checks,
      ok: checks.every((c) => c.ok),
      kills,
      logDir,
      run: names.run,
    };
  } finally {
    await processes.stopAll();
    await infra.close(options.keep ?? false);
  }
}
