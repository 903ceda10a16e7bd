/**
 * `pnpm demo` as a function: the order-service flow in one process on the embedded default
 * (PGlite, or PostgreSQL or MySQL/MariaDB with `databaseUrl`) and the in-memory broker. Real HTTP requests
 * create the orders, with retries and duplicates; the broker duplicates deliveries, hands
 * some to two handlers at once and crashes consumers at every inbox step; failures are
 * injected at the steps of the order and payment writes. It never throws for a broken
 * invariant: the report's `ok` and `checks` say whether the run held.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { ConfigurationError, rowsOf, type Store, type StoreDialect } from '@justonce/core';
import {
  CRASH_POINTS,
  createMemoryBroker,
  seededRandom,
  type MemoryBroker,
} from '@justonce/core/testing';
import { runLoad } from '../load/run-load';
import { createOrdersTables } from '../orders/app';
import { createPaymentsTables } from '../payments/handler';
import { memoryLedger } from '../provider/ledger';
import { flowChecks, type FlowReport } from '../report/checks';
import { collectOutcome } from '../report/collect';
import type { FlowProgress } from '../report/progress';
import { createShippingTables } from '../shipping/handler';
import { inProcessFailures, type InjectedFailures } from './failures';
import { ORDER_TOPIC, startDemoServices } from './services';
import { openDemoStores, type DemoStores } from './stores';

/** Options of {@link runDemo}. */
export interface DemoOptions {
  /** Orders to create. Default 200. */
  readonly orders?: number;
  /**
   * PostgreSQL, or MySQL/MariaDB (`mysql://`), to run on; PGlite (embedded, in memory) when
   * omitted.
   */
  readonly databaseUrl?: string;
  /** Seed of the random choices. Default 2024. */
  readonly seed?: number;
  /** Requests in flight at once. Default 16. */
  readonly concurrency?: number;
  /** Longest wait for the flow to settle after the load, in milliseconds. Default 120 000. */
  readonly settleTimeoutMs?: number;
  readonly onProgress?: (progress: FlowProgress) => void;
}

/** The report of a demo run. */
export interface DemoReport extends FlowReport {
  readonly database: StoreDialect;
  readonly injected: InjectedFailures & ReturnType<MemoryBroker['injected']>;
}

function checkCount(name: string, value: number, min: number, max: number): number {
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new ConfigurationError(`${name} must be an integer from ${min} to ${max}`, {
      [name]: value,
    });
  }
  return value;
}

async function count(store: Store, sql: string): Promise<number> {
  const [row] = rowsOf<{ n: string | number }>(await store.knex.raw(sql));
  return Number(row?.n ?? 0);
}

/** Orders shipped, and whether anything is still on its way. */
async function flowState(stores: DemoStores, broker: MemoryBroker) {
  const shipped = await count(
    stores.shipping,
    `select count(distinct order_id) as n from ${stores.shipping.names.table('shipments')}`,
  );
  const pending = async (store: Store) =>
    count(
      store,
      `select count(*) as n from ${store.names.table('outbox')} where status = 'pending'`,
    );
  const queued = broker.stats();
  const moving =
    (await pending(stores.orders)) +
    (await pending(stores.payments)) +
    queued.ready +
    queued.inFlight +
    queued.scheduled;
  return { shipped, moving };
}

/**
 * Resolves `true` once every accepted order is shipped and nothing moves (no pending event,
 * nothing queued or in flight at the broker) twice in a row; `false` after `timeoutMs`.
 */
async function waitUntilSettled(
  stores: DemoStores,
  broker: MemoryBroker,
  timeoutMs: number,
  onShipped: (shipped: number) => void,
  accepted: number,
): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  let quietBefore = false;
  while (Date.now() < deadline) {
    const state = await flowState(stores, broker);
    onShipped(state.shipped);
    const quiet = state.shipped >= accepted && state.moving === 0;
    if (quiet && quietBefore) return true;
    quietBefore = quiet;
    await sleep(quiet ? 50 : 100);
  }
  return false;
}

/** Runs the demo and returns its report. */
export async function runDemo(options: DemoOptions = {}): Promise<DemoReport> {
  const total = checkCount('orders', options.orders ?? 200, 1, 100_000);
  const seed = checkCount('seed', options.seed ?? 2024, 0, Number.MAX_SAFE_INTEGER);
  const concurrency = checkCount('concurrency', options.concurrency ?? 16, 1, 256);
  const random = seededRandom(seed);
  const opened = performance.now();
  const stores = await openDemoStores(options.databaseUrl);
  const broker = createMemoryBroker({
    seed,
    faults: { duplicateRate: 0.1, concurrentRate: 0.03, crashRate: 0.04 },
    crashRedeliveryDelayMs: 2,
    maxRetryDelayMs: 20,
  });
  const ledger = memoryLedger();
  const failures = inProcessFailures(seededRandom(seed + 1), 0.02);
  let services: Awaited<ReturnType<typeof startDemoServices>> | undefined;
  try {
    await createOrdersTables(stores.orders);
    await createPaymentsTables(stores.payments);
    await createShippingTables(stores.shipping);
    services = await startDemoServices(stores, broker, ledger, seededRandom(seed + 2), failures);
    const setupMs = performance.now() - opened;

    const started = Date.now();
    let accepted = 0;
    let shipped = 0;
    let loading = true;
    const poller = (async () => {
      while (loading) {
        shipped = (await flowState(stores, broker)).shipped;
        options.onProgress?.({ accepted, shipped, total });
        await sleep(200);
      }
    })();
    poller.catch(() => undefined); // awaited after the load
    const load = await runLoad({
      baseUrl: services.baseUrl,
      orders: total,
      concurrency,
      random,
      keyPrefix: 'demo',
      onSettled: (n) => (accepted = n),
    });
    loading = false;
    await poller;
    const settled = await waitUntilSettled(
      stores,
      broker,
      options.settleTimeoutMs ?? 120_000,
      (now) => options.onProgress?.({ accepted, shipped: now, total }),
      load.accepted.length,
    );
    const wallMs = Date.now() - started;
    const outcome = await collectOutcome(stores, ledger, load.accepted, ORDER_TOPIC);
    const injected = { ...failures.counts(), ...broker.injected() };
    const crashes = CRASH_POINTS.reduce((sum, point) => sum + injected.crashes[point], 0);
    const checks = flowChecks(total, load, outcome, settled);
    return {
      title: `order service in one process: ${stores.label} and the in-memory broker`,
      database: stores.orders.dialect,
      orders: total,
      load,
      outcome,
      settled,
      wallMs,
      injected,
      faults: [
        ['broker: duplicate deliveries', String(injected.duplicates)],
        ['broker: concurrent deliveries', String(injected.concurrent)],
        ['broker: crashes at inbox steps', String(crashes)],
        ['failed: order written, not committed', String(injected.orderWritten)],
        ['failed: charged, record not written', String(injected.charged)],
        ['failed: payment written, not committed', String(injected.recorded)],
      ],
      environment: [
        ['store', stores.label],
        ['store startup (not in wall time)', `${(setupMs / 1000).toFixed(2)} s`],
      ],
      checks,
      ok: checks.every((c) => c.ok),
    };
  } finally {
    await services?.stop();
    await broker.close();
    await stores.close();
  }
}
