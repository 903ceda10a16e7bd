/**
 * A runnable SQS consumer: `tsx examples/sqs-consumer/main.ts`.
 *
 * It creates a queue with a dead-letter queue (redrive after 3 receives), sends orders to it
 * (some twice, as a producer retrying would, and one that always fails), and runs a consumer
 * that records each order once in PostgreSQL (DATABASE_URL) or, without it, in embedded
 * PGlite. Orders are typed messages: each carries the `type` attribute `order.placed`, and
 * `messageHandler` hands the handler its body parsed and checked by the schema. While handling
 * an order it emits an `order.accepted` event through the typed outbox; a relay publishes
 * those events to a second queue with the SQS publisher. Ctrl-C (SIGINT) or SIGTERM stops it
 * gracefully; otherwise it stops once every order is settled and prints what happened.
 *
 * Environment: SQS_ENDPOINT (default: the ElasticMQ that `pnpm services:up` starts),
 * AWS_REGION (default us-east-1), DATABASE_URL (default: PGlite in memory), ORDERS (default 20).
 */
import { randomBytes } from 'node:crypto';
import {
  CreateQueueCommand,
  DeleteQueueCommand,
  GetQueueAttributesCommand,
  SendMessageBatchCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import type { Message } from '@aws-sdk/client-sqs';
import {
  consoleLogger,
  createInbox,
  createRelay,
  createStore,
  defineMessage,
  FinalError,
  MESSAGE_TYPE_HEADER,
  messageHandler,
  on,
  type MessagePayload,
  type SettledEvent,
} from '@justonce/core';
import { createSqsConsumer, createSqsPublisher } from '@justonce/sqs';
import { z } from 'zod';
import { ensureServices } from '../../test-support/services';

const orderSchema = z.object({ orderId: z.string().min(1), cents: z.number().int() });

/** What the example sends to the orders queue. */
const OrderPlaced = defineMessage({ type: 'order.placed', schema: orderSchema });

/** What the consumer emits for each order it records (to the events queue, known at run time). */
const OrderAccepted = defineMessage({
  type: 'order.accepted',
  schema: z.object({ accepted: orderSchema }),
  key: (event) => event.accepted.orderId,
});

type Order = MessagePayload<typeof OrderPlaced>;

async function sqsEndpoint(): Promise<string> {
  if (process.env.SQS_ENDPOINT) return process.env.SQS_ENDPOINT;
  return (await ensureServices(['sqs'])).sqsEndpoint;
}

async function main(): Promise<void> {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  const orders = Number(process.env.ORDERS ?? 20);
  const clientConfig = {
    endpoint: await sqsEndpoint(),
    region: process.env.AWS_REGION ?? 'us-east-1',
    credentials: { accessKeyId: 'x', secretAccessKey: 'x' },
  };
  const sqs = new SQSClient(clientConfig);
  const run = randomBytes(3).toString('hex');

  // Queues: orders (with a dead-letter queue after 3 receives) and the events queue.
  const create = async (name: string, attributes: Record<string, string> = {}) => {
    const { QueueUrl } = await sqs.send(
      new CreateQueueCommand({ QueueName: name, Attributes: attributes }),
    );
    if (!QueueUrl) throw new Error(`no URL for ${name}`);
    return QueueUrl;
  };
  const dlqUrl = await create(`example-orders-dlq-${run}`);
  const { Attributes } = await sqs.send(
    new GetQueueAttributesCommand({ QueueUrl: dlqUrl, AttributeNames: ['QueueArn'] }),
  );
  const ordersUrl = await create(`example-orders-${run}`, {
    VisibilityTimeout: '10',
    RedrivePolicy: JSON.stringify({
      deadLetterTargetArn: Attributes?.QueueArn,
      maxReceiveCount: 3,
    }),
  });
  const eventsUrl = await create(`example-order-events-${run}`);

  // The store: PostgreSQL when DATABASE_URL is set, else PGlite in memory.
  const schema = `example_sqs_${run}`;
  const store = await createStore(
    process.env.DATABASE_URL
      ? { connectionString: process.env.DATABASE_URL, schema }
      : { pglite: {}, schema },
  );
  await store.migrate();
  await store.knex.raw(
    `create table ${store.names.schema}."orders" (order_id text primary key, cents integer not null)`,
  );

  // Orders to send: every third one twice (a producer retrying), and one poison order.
  const entries: Order[] = [];
  for (let i = 0; i < orders; i++) {
    const order: Order = { orderId: `order-${i}`, cents: 100 + i };
    const copies = i % 3 === 0 ? 2 : 1;
    for (let c = 0; c < copies; c++) entries.push(order);
  }
  entries.push({ orderId: 'order-poison', cents: -1 });
  for (let i = 0; i < entries.length; i += 10) {
    await sqs.send(
      new SendMessageBatchCommand({
        QueueUrl: ordersUrl,
        Entries: entries.slice(i, i + 10).map((order, j) => ({
          Id: `e${j}`,
          MessageBody: JSON.stringify(order),
          MessageAttributes: {
            'message-id': { DataType: 'String', StringValue: order.orderId },
            [MESSAGE_TYPE_HEADER]: { DataType: 'String', StringValue: OrderPlaced.type },
          },
        })),
      }),
    );
  }

  const logger = consoleLogger('warn');
  const settled: SettledEvent<unknown, Message>[] = [];
  const consumer = createSqsConsumer({
    clientConfig,
    queueUrl: ordersUrl,
    concurrency: 5,
    waitTimeSeconds: 2,
    retry: { baseMs: 500, capMs: 2_000 },
    // Below the redrive's maxReceiveCount (3): the inbox records the dead letter before SQS's
    // redrive would move the message; failed orders come back after 0.5-2 s.
    inbox: createInbox({
      store,
      consumer: 'order-recorder',
      maxAttempts: 2,
      backoff: { baseMs: 500, capMs: 2_000 },
      logger,
    }),
    logger,
    // Routed by the `type` attribute; a body that is not JSON or fails the schema is
    // dead-lettered at once as INVALID_PAYLOAD.
    handler: messageHandler({
      routes: [
        on(OrderPlaced, async (order, { trx, outbox }) => {
          if (order.cents < 0) throw new FinalError(`order ${order.orderId} has a negative amount`);
          await trx.raw(
            `insert into ${store.names.schema}."orders" (order_id, cents) values (?, ?)`,
            [order.orderId, order.cents],
          );
          await outbox.add(OrderAccepted, { accepted: order }, { destination: eventsUrl });
        }),
      ],
    }),
    onSettled: (event) => settled.push(event),
  });

  const publisher = createSqsPublisher({ clientConfig, logger });
  const relay = createRelay({ store, publisher, logger, pollIntervalMs: 200 });

  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    await consumer.stop();
    await relay.stop();
    await publisher.close();
  };
  process.once('SIGINT', () => void stop());
  process.once('SIGTERM', () => void stop());

  await relay.start();
  await consumer.start();
  console.log(`consumer started on ${ordersUrl} (${entries.length} messages sent)`);

  // Every message settles once as deleted: acked (processed, duplicate) or dead-lettered.
  const deadline = Date.now() + 60_000;
  const deleted = () =>
    settled.filter((e) => e.action === 'acked' || e.action === 'dead-lettered').length;
  while (!stopping && deleted() < entries.length) {
    if (Date.now() > deadline) throw new Error('the example did not settle within 60 s');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  // Give the relay a moment to publish the last events, then stop.
  while (!stopping && (await relay.stats()).pending > 0 && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  await stop();

  const count = (status: string) => settled.filter((e) => e.outcome?.status === status).length;
  const recorded = await store.knex.withSchema(schema).from('orders').count({ n: '*' }).first();
  console.log(
    JSON.stringify(
      {
        messagesSent: entries.length,
        processed: count('processed'),
        duplicates: count('duplicate'),
        deadLettered: count('dead-lettered'),
        retries: settled.filter((e) => e.action === 'redelivered').length,
        ordersRecorded: Number(recorded?.n),
        eventsPublished: (await relay.stats()).published,
      },
      null,
      2,
    ),
  );

  for (const url of [ordersUrl, dlqUrl, eventsUrl]) {
    await sqs.send(new DeleteQueueCommand({ QueueUrl: url }));
  }
  sqs.destroy();
  if (process.env.DATABASE_URL) await store.knex.raw(`drop schema ${store.names.schema} cascade`);
  await store.close();
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
