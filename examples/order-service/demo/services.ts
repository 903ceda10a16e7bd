/**
 * The four services of the example wired into one process: the same orders app, payments
 * and shipping handlers and provider as the multi-process example, with the in-memory
 * broker in place of Kafka and RabbitMQ and the demo's stores in place of PostgreSQL.
 */
import { createServer, type Server } from 'node:http';
import { createInbox, createOutbox, createRelay, type Consumer, type Relay } from '@justonce/core';
import type { MemoryBroker } from '@justonce/core/testing';
import { createOrderKeys, createOrdersApp } from '../orders/app';
import { createCharges, createPaymentsInbox, paymentsHandler } from '../payments/handler';
import { createProviderClient } from '../payments/provider-client';
import type { Ledger } from '../provider/ledger';
import { createProviderServer } from '../provider/server';
import { shippingHandler } from '../shipping/handler';
import type { inProcessFailures } from './failures';
import type { DemoStores } from './stores';

/** The memory broker's queues, named as the example's topic and queue. */
export const ORDER_TOPIC = 'order.created';
export const PAYMENT_QUEUE = 'payment.captured';

/** The provider's time limits in the demo: short, to keep it fast. */
const PROVIDER_TIMEOUT_MS = 60;
const PROVIDER_SLOW_MS = 120;

/** The running services. */
export interface DemoServices {
  /** Where the orders API listens. */
  readonly baseUrl: string;
  stop(): Promise<void>;
}

/** Listens on an ephemeral port and resolves to the server's URL. */
async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('not a TCP server');
  return `http://127.0.0.1:${address.port}`;
}

function close(server: Server): Promise<void> {
  server.closeAllConnections();
  return new Promise((resolve) => server.close(() => resolve()));
}

/** Starts the provider, the orders API, both relays and both consumers. */
export async function startDemoServices(
  stores: DemoStores,
  broker: MemoryBroker,
  ledger: Ledger,
  random: () => number,
  failures: ReturnType<typeof inProcessFailures>,
): Promise<DemoServices> {
  const provider = createProviderServer({
    ledger,
    random,
    failRate: 0.05,
    slowRate: 0.02,
    slowMs: PROVIDER_SLOW_MS,
  });
  const providerUrl = await listen(provider);

  const { orders, payments, shipping } = stores;
  const app = createOrdersApp({
    store: orders,
    operations: createOrderKeys(orders),
    outbox: createOutbox({ store: orders }),
    topic: ORDER_TOPIC,
    onWritten: failures.onOrderWritten,
  });
  const api = createServer(app);
  const baseUrl = await listen(api);

  const relays: Relay[] = [orders, payments].map((store) =>
    createRelay({ store, publisher: broker.publisher(), onPublished: 'keep' }),
  );
  const consumers: Consumer[] = [
    broker.consume(ORDER_TOPIC, {
      inbox: createPaymentsInbox(payments, createCharges(stores.charges), broker.onStep),
      handler: paymentsHandler({
        store: payments,
        provider: createProviderClient({ url: providerUrl, timeoutMs: PROVIDER_TIMEOUT_MS }),
        destination: PAYMENT_QUEUE,
        onStep: failures.onPaymentStep,
      }),
      concurrency: 4,
    }),
    broker.consume(PAYMENT_QUEUE, {
      inbox: createInbox({
        store: shipping,
        consumer: 'shipping',
        onStep: broker.onStep,
        maxAttempts: 20,
      }),
      handler: shippingHandler(shipping),
      concurrency: 4,
    }),
  ];
  for (const relay of relays) await relay.start();
  for (const consumer of consumers) await consumer.start();

  return {
    baseUrl,
    stop: async () => {
      await close(api);
      for (const consumer of consumers) await consumer.stop();
      for (const relay of relays) await relay.stop();
      await close(provider);
    },
  };
}
