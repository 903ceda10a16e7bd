import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { CreateQueueCommand, DeleteQueueCommand, SQSClient } from '@aws-sdk/client-sqs';
import { Kafka, logLevel } from 'kafkajs';
import { propagation, ROOT_CONTEXT, SpanKind, trace } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { createKafkaConsumer, createKafkaPublisher } from '@justonce/kafka';
import { createRabbitConsumer, createRabbitPublisher } from '@justonce/rabbitmq';
import { createSqsConsumer, createSqsPublisher } from '@justonce/sqs';
import { createInbox, createOutbox, createRelay, rowsOf, type Publisher } from '../src';
import {
  createOrderKeys,
  createOrdersApp,
  createOrdersTables,
} from '../../../examples/order-service/orders/app';
import {
  createCharges,
  createPaymentsInbox,
  createPaymentsTables,
  paymentsHandler,
} from '../../../examples/order-service/payments/handler';
import { createProviderClient } from '../../../examples/order-service/payments/provider-client';
import { memoryLedger } from '../../../examples/order-service/provider/ledger';
import { createProviderServer } from '../../../examples/order-service/provider/server';
import {
  createShippingTables,
  shippingHandler,
} from '../../../examples/order-service/shipping/handler';
import { amqpUrl, kafkaBrokers, sqsClientConfig } from '../../../test-support/services';
import {
  installTracing,
  linkedTo,
  parentOf,
  type TestTracing,
} from '../../../test-support/tracing';
import { waitFor } from '../../../test-support/wait-for';
import { openTestStore } from './db';

/**
 * One trace from an HTTP request to the last consumer, across real brokers: the order-service
 * example's services in one process with an in-memory span exporter. `POST /orders` (the
 * HTTP operation span) adds `order.created`; the orders relay sends it to Kafka; two payments
 * consumers (two groups) each charge it and add `payment.captured`, one relayed to RabbitMQ,
 * the other to SQS; a shipping consumer on each ships it. Every span from the client's request
 * to both shipping consumers carries the client's trace id, each with its expected parent.
 */

type TestStore = Awaited<ReturnType<typeof openTestStore>>;
type Hop = 'rabbitmq' | 'sqs';

const run = Math.random().toString(36).slice(2, 8);
const topic = `traces.orders.${run}`;
const rabbitQueue = `traces.captured.${run}`;
const sqsQueue = `traces-captured-${run}`;

let tracing: TestTracing;
const stops: Array<() => Promise<unknown>> = [];
const stores: Partial<Record<'orders' | `payments-${Hop}` | `shipping-${Hop}`, TestStore>> = {};
let ordersUrl: string;
let sqsQueueUrl: string;

async function storeFor(name: keyof typeof stores): Promise<TestStore> {
  const store = await openTestStore('postgres');
  stores[name] = store;
  return store;
}

function listen(server: Server): Promise<string> {
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    });
  });
}

async function startRelay(store: TestStore, publisher: Publisher): Promise<void> {
  const relay = createRelay({ store, publisher, pollIntervalMs: 100 });
  await relay.start();
  stops.push(
    () => relay.stop(),
    () => publisher.close(),
  );
}

async function startOrders(): Promise<void> {
  const store = await storeFor('orders');
  await createOrdersTables(store);
  const app = createOrdersApp({
    store,
    operations: createOrderKeys(store),
    outbox: createOutbox({ store }),
    topic,
  });
  const server = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  ordersUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/orders`;
  stops.push(() => new Promise((resolve) => server.close(resolve)));
  await startRelay(store, createKafkaPublisher({ brokers: kafkaBrokers() }));
}

/** A payments service whose `payment.captured` goes over `hop`. */
async function startPayments(hop: Hop, providerUrl: string): Promise<void> {
  const store = await storeFor(`payments-${hop}`);
  await createPaymentsTables(store);
  const consumer = createKafkaConsumer({
    brokers: kafkaBrokers(),
    groupId: `traces-payments-${hop}-${run}`,
    topics: [topic],
    fromBeginning: true,
    consumerConfig: { sessionTimeout: 6_000, heartbeatInterval: 500, maxWaitTimeInMs: 100 },
    inbox: createPaymentsInbox(store, createCharges(store)),
    handler: paymentsHandler({
      store,
      provider: createProviderClient({ url: providerUrl, timeoutMs: 5_000 }),
      destination: hop === 'rabbitmq' ? rabbitQueue : sqsQueueUrl,
    }),
  });
  await consumer.start();
  stops.push(() => consumer.stop());
  await startRelay(
    store,
    hop === 'rabbitmq'
      ? createRabbitPublisher({ url: amqpUrl() })
      : createSqsPublisher({ clientConfig: sqsClientConfig() }),
  );
}

async function startShipping(hop: Hop): Promise<void> {
  const store = await storeFor(`shipping-${hop}`);
  await createShippingTables(store);
  const inbox = createInbox({ store, consumer: 'shipping' });
  const consumer =
    hop === 'rabbitmq'
      ? // As the example runs it: deliveries that wait together share one transaction.
        createRabbitConsumer({
          url: amqpUrl(),
          queue: rabbitQueue,
          inbox,
          handler: shippingHandler(store),
          mode: 'batch',
        })
      : createSqsConsumer({
          clientConfig: sqsClientConfig(),
          queueUrl: sqsQueueUrl,
          waitTimeSeconds: 1,
          inbox,
          handler: shippingHandler(store),
        });
  await consumer.start();
  stops.push(() => consumer.stop());
}

beforeAll(async () => {
  tracing = installTracing();
  const kafka = new Kafka({ brokers: kafkaBrokers(), logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic, numPartitions: 1 }], waitForLeaders: true });
  stops.push(async () => {
    await admin.deleteTopics({ topics: [topic] }).catch(() => undefined);
    await admin.disconnect();
  });
  const sqs = new SQSClient(sqsClientConfig());
  sqsQueueUrl = (await sqs.send(new CreateQueueCommand({ QueueName: sqsQueue }))).QueueUrl!;
  stops.push(async () => {
    await sqs.send(new DeleteQueueCommand({ QueueUrl: sqsQueueUrl })).catch(() => undefined);
    sqs.destroy();
  });
  const provider = createProviderServer({
    ledger: memoryLedger(),
    random: () => 0.5,
    failRate: 0,
    slowRate: 0,
    slowMs: 0,
  });
  const providerUrl = await listen(provider);
  stops.push(() => new Promise((resolve) => provider.close(resolve)));
  await startOrders();
  // The shipping consumers first: the RabbitMQ one declares its queue.
  await Promise.all([startShipping('rabbitmq'), startShipping('sqs')]);
  await Promise.all([startPayments('rabbitmq', providerUrl), startPayments('sqs', providerUrl)]);
}, 60_000);

afterAll(async () => {
  for (const stop of stops.reverse()) await stop();
  for (const store of Object.values(stores)) await store.dispose();
  await tracing.uninstall();
}, 60_000);

async function shipments(store: TestStore | undefined): Promise<number> {
  const result = await store!.knex.raw(
    `select count(*)::int as n from ${store!.names.table('shipments')}`,
  );
  return Number(rowsOf<{ n: number }>(result)[0]?.n);
}

/** The span's ancestors, nearest first, by name, as far as the trace's exported spans go. */
function ancestry(span: ReadableSpan, spans: readonly ReadableSpan[]): string[] {
  const byId = new Map(spans.map((s) => [s.spanContext().spanId, s]));
  const names: string[] = [];
  for (let at = byId.get(parentOf(span) ?? ''); at !== undefined;) {
    names.push(at.name);
    at = byId.get(parentOf(at) ?? '');
  }
  return names;
}

function postOrder(key: string, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(ordersUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': key, ...headers },
    body: JSON.stringify({ customerId: 'c-trace', amountCents: 1234, currency: 'EUR' }),
  });
}

it('one trace id from the HTTP request through Kafka, then RabbitMQ and SQS, to shipping', async () => {
  // The client's span, carried to the API in `traceparent` as an instrumented client sends it.
  const client = trace.getTracer('test-client').startSpan('client POST /orders');
  const headers: Record<string, string> = {};
  propagation.inject(trace.setSpan(ROOT_CONTEXT, client), headers);
  const response = await postOrder(`order-${run}`, headers);
  expect(response.status).toBe(201);
  client.end();
  const traceId = client.spanContext().traceId;

  const inTrace = (): ReadableSpan[] =>
    tracing.spans().filter((s) => s.spanContext().traceId === traceId);
  const shipped = (system: string) => (s: ReadableSpan) =>
    s.attributes['messaging.system'] === system &&
    s.kind === SpanKind.CONSUMER &&
    s.attributes['justonce.consumer'] === 'shipping';
  await waitFor(
    'both shipping consumers to end their process spans',
    () => inTrace().some(shipped('rabbitmq')) && inTrace().some(shipped('aws_sqs')),
    { timeoutMs: 45_000, intervalMs: 100 },
  );
  expect(await shipments(stores['shipping-rabbitmq'])).toBe(1);
  expect(await shipments(stores['shipping-sqs'])).toBe(1);

  const spans = inTrace();
  const http = 'idempotent create-order';
  const upToKafka = [`process ${topic}`, `create ${topic}`, http, 'client POST /orders'];
  const rabbit = spans.find(shipped('rabbitmq'))!;
  expect(rabbit.name).toBe(`process ${rabbitQueue}`);
  expect(ancestry(rabbit, spans)).toEqual([`create ${rabbitQueue}`, ...upToKafka]);
  const sqs = spans.find(shipped('aws_sqs'))!;
  expect(sqs.name).toBe(`process ${sqsQueue}`);
  expect(ancestry(sqs, spans)).toEqual([`create ${sqsQueueUrl}`, ...upToKafka]);

  // The HTTP operation: a child of the client's span, not a replay.
  const operation = spans.find((s) => s.name === http)!;
  expect(parentOf(operation)).toBe(client.spanContext().spanId);
  expect(operation.kind).toBe(SpanKind.INTERNAL);
  expect(operation.attributes).toMatchObject({
    'justonce.operation.name': 'create-order',
    'justonce.operation.replayed': false,
    'http.response.status_code': 201,
  });

  // One send per relay publish, each a child of its event's create span.
  for (const [destination, system] of [
    [topic, 'kafka'],
    [rabbitQueue, 'rabbitmq'],
    [sqsQueueUrl, 'aws_sqs'],
  ] as const) {
    const send = spans.filter((s) => s.name === `send ${destination}`);
    expect(send).toHaveLength(1);
    expect(send[0]?.kind).toBe(SpanKind.PRODUCER);
    expect(send[0]?.attributes['messaging.system']).toBe(system);
    expect(ancestry(send[0]!, spans)[0]).toBe(`create ${destination}`);
  }

  // Each Kafka group's process span, with the conventions' attributes.
  const kafka = spans.filter((s) => s.name === `process ${topic}`);
  expect(kafka.map((s) => s.attributes['messaging.consumer.group.name']).sort()).toEqual([
    `traces-payments-rabbitmq-${run}`,
    `traces-payments-sqs-${run}`,
  ]);
  for (const span of kafka) {
    expect(span.attributes).toMatchObject({
      'messaging.system': 'kafka',
      'messaging.destination.name': topic,
      'messaging.destination.partition.id': '0',
      'messaging.kafka.offset': 0,
      'messaging.operation.type': 'process',
      'justonce.inbox.outcome': 'processed',
    });
  }
  expect(sqs.attributes).toMatchObject({
    'messaging.destination.name': sqsQueue,
    'justonce.inbox.outcome': 'processed',
  });

  // The RabbitMQ batch's own span (its own trace) links to the message's create context.
  const createRabbit = spans.find((s) => s.name === `create ${rabbitQueue}`)!;
  const batch = tracing
    .spans()
    .find(
      (s) =>
        s.attributes['messaging.batch.message_count'] !== undefined &&
        linkedTo(s).some((c) => c.spanId === createRabbit.spanContext().spanId),
    );
  expect(batch?.name).toBe(`process ${rabbitQueue}`);
  expect(linkedTo(rabbit).map((c) => c.spanId)).toContain(batch?.spanContext().spanId);

  // A retry of the request is answered from the record: its span says so, and adds nothing.
  tracing.exporter.reset();
  const replay = await postOrder(`order-${run}`);
  expect(replay.status).toBe(201);
  const [again, ...more] = tracing.spans().filter((s) => s.name === http);
  expect(more).toEqual([]);
  expect(again?.attributes['justonce.operation.replayed']).toBe(true);
  expect(tracing.spans().filter((s) => s.name.startsWith('create '))).toEqual([]);
}, 60_000);
