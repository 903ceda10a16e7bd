/**
 * `pnpm bench rabbitmq`: @justonce/rabbitmq on the real broker and PostgreSQL, each case
 * beside a baseline written by hand and measured in the same process and run.
 *
 * - consumer: `createRabbitConsumer` (one inbox transaction per message, prefetch 64,
 *   concurrency 8), beside a raw amqplib consumer with the same prefetch and as many
 *   handlers at once that runs the inbox's statements by hand: per message a transaction
 *   with the same dedup insert into `inbox_records` (`on conflict do nothing`, with a
 *   SHA-256 of the body as fingerprint), the same business row, commit, acknowledge. Both
 *   drain persistent messages published before the clock starts, timed from the start of
 *   consumption to the last acknowledgement.
 * - relay: the outbox relay publishing through `createRabbitPublisher`, beside the same
 *   work by hand with raw amqplib: as many loops as the relay runs cycles, each selecting a
 *   batch `for update skip locked`, publishing it `mandatory` and persistent on a confirm
 *   channel, awaiting the confirms, deleting the rows and committing.
 * - publisher: `createRabbitPublisher.publish` alone, beside raw confirmed publishing of
 *   the same messages (same batches, `mandatory`, persistent, two batches in flight).
 * - relay-vs-raw-publish: the relay beside raw confirmed publishing with no database at
 *   all. For information: the relay's claim and mark round trips are in one column only.
 *
 * BENCH_RABBIT_CASES (a comma-separated subset of the case names) runs only those cases.
 * A warm-up round first, then BENCH_ROUNDS rounds (default 6) alternating which side goes
 * first; `perSec` and `baselinePerSec` are medians, `ratio` the median of per-round ratios.
 * BENCH_RABBIT_MESSAGES sets the consumer's messages per round (default 2 000),
 * BENCH_RABBIT_RELAY_MESSAGES the relay's and publisher's (default 10 000). The relay's
 * publisher is connected before its clock starts, as the raw side's channel is, and the relay
 * is timed to the last confirm it received. The last line printed is the JSON.
 */
import { createHash, randomBytes } from 'node:crypto';
import { connect, type Channel, type ConfirmChannel, type ConsumeMessage } from 'amqplib';
import {
  createInbox,
  createStore,
  rowsOf,
  silentLogger,
  type OutgoingMessage,
  type Store,
} from '@justonce/core';
import { createRabbitConsumer, createRabbitPublisher } from '@justonce/rabbitmq';
import { ensureServices } from '../test-support/services';
import {
  benchRounds,
  timedRelayRun,
  fillOutbox,
  INBOX_RETENTION_MS,
  costMeter,
  measureCases,
  printCostTable,
  wantedCases,
} from './_support';

const MESSAGES = Number(process.env.BENCH_RABBIT_MESSAGES ?? 2_000);
const RELAY_MESSAGES = Number(process.env.BENCH_RABBIT_RELAY_MESSAGES ?? 10_000);
const ROUNDS = benchRounds();
const PREFETCH = 64;
const CONCURRENCY = 8;
const RELAY_BATCH = 500;
const KEYS = 1_000;
const RELAY_CYCLES = 2;
const JSON_TYPE = 'application/json';

function tag(): string {
  return randomBytes(4).toString('hex');
}

/** Publishes `count` persistent messages with ids to `queue` and waits for their confirms. */
async function fillQueue(channel: ConfirmChannel, queue: string, count: number): Promise<void> {
  const run = tag();
  for (let i = 0; i < count; i++) {
    const body = Buffer.from(JSON.stringify({ n: i, body: 'x'.repeat(64) }));
    if (!channel.sendToQueue(queue, body, { messageId: `${run}-${i}`, persistent: true })) {
      await new Promise((r) => channel.once('drain', r));
    }
  }
  await channel.waitForConfirms();
}

/** The framework: the inbox consumer draining `count` messages; messages per second. */
async function inboxConsumer(url: string, store: Store, queue: string, count: number) {
  let settled = 0;
  let finished!: () => void;
  const done = new Promise<void>((r) => (finished = r));
  const effects = `${store.names.schema}."effects"`;
  const consumer = createRabbitConsumer({
    url,
    queue,
    inbox: createInbox({ store, consumer: `bench-${tag()}` }),
    prefetch: PREFETCH,
    concurrency: CONCURRENCY,
    handler: async (ctx) => {
      await ctx.trx.raw(`insert into ${effects} (message_id, body) values (?, ?)`, [
        ctx.messageId,
        Buffer.from(ctx.message.body as Uint8Array).toString(),
      ]);
    },
    onSettled: (event) => {
      // A hold is not a settlement: the delivery is tried again in-process.
      if (event.action !== 'held' && ++settled === count) finished();
    },
  });
  const cpu = costMeter();
  const started = performance.now();
  await consumer.start();
  await done;
  const elapsed = performance.now() - started;
  const used = cpu(count);
  await consumer.stop();
  return { perSec: count / (elapsed / 1000), ...used };
}

/** The baseline: a raw amqplib consumer doing the same statements by hand. */
async function rawConsumer(url: string, store: Store, queue: string, count: number) {
  const model = await connect(url);
  const channel: Channel = await model.createChannel();
  await channel.prefetch(PREFETCH);
  const effects = `${store.names.schema}."effects"`;
  const inboxRecords = store.names.table('inbox_records');
  const attempts = store.names.table('inbox_attempts');
  const consumerName = `raw-${tag()}`;
  const waiting: ConsumeMessage[] = [];
  let running = 0;
  let acked = 0;
  let finished!: () => void;
  const done = new Promise<void>((r) => (finished = r));

  async function handle(message: ConsumeMessage): Promise<void> {
    const id = message.properties.messageId as string;
    const requestHash = createHash('sha256').update(message.content).digest('hex');
    await store.knex.transaction(async (trx) => {
      const inserted = (await trx.raw(
        `with cleared as (
           delete from ${attempts} where scope = ? and consumer = ? and message_id = ?
         )
         insert into ${inboxRecords}
           (scope, consumer, message_id, status, fingerprint, attempts, expires_at)
         values (?, ?, ?, 'SUCCEEDED', ?, 1, now() + ?::double precision * interval '1 millisecond')
         on conflict (consumer, scope, message_id) do nothing returning scope, message_id`,
        ['default', consumerName, id, 'default', consumerName, id, requestHash, INBOX_RETENTION_MS],
      )) as { rows: unknown[] };
      if (inserted.rows.length > 0) {
        await trx.raw(`insert into ${effects} (message_id, body) values (?, ?)`, [
          id,
          message.content.toString(),
        ]);
      }
    });
    channel.ack(message);
    if (++acked === count) finished();
  }
  function pump(): void {
    while (running < CONCURRENCY && waiting.length > 0) {
      running++;
      void handle(waiting.shift()!).finally(() => {
        running--;
        pump();
      });
    }
  }

  const cpu = costMeter();

  const started = performance.now();
  await channel.consume(queue, (message) => {
    if (message === null) return;
    waiting.push(message);
    pump();
  });
  await done;
  const elapsed = performance.now() - started;
  const used = cpu(count);
  await model.close();
  return { perSec: count / (elapsed / 1000), ...used };
}

/** The framework: the relay through createRabbitPublisher; messages per second. */
async function relayRun(url: string, store: Store, admin: Channel, queue: string, count: number) {
  await fillOutbox(store, count, (n) => ({
    destination: queue,
    key: `key-${n % KEYS}`,
    payload: { n, body: 'x'.repeat(64) },
  }));
  const rabbit = createRabbitPublisher({ url });
  // Connected before the clock starts, as the raw side is: one message through it first.
  await rabbit.publish(outgoingMessages(queue, 1));
  const run = await timedRelayRun(store, rabbit, count, {
    batchSize: RELAY_BATCH,
    concurrency: RELAY_CYCLES,
    onPublished: 'delete',
    logger: silentLogger,
  });
  await admin.purgeQueue(queue);
  return run;
}

/** Raw confirmed, mandatory publishing of the same messages, two batches in flight. */
async function rawPublish(url: string, admin: Channel, queue: string, count: number) {
  const model = await connect(url);
  const channel = await model.createConfirmChannel();
  const messages = outgoingMessages(queue, count).map((m) => ({
    id: m.messageId,
    body: m.payload as Buffer,
    key: m.key,
  }));
  await publishRaw(channel, queue, messages.slice(0, 1));
  let next = 1;
  const cpu = costMeter();
  const started = performance.now();
  await Promise.all(
    Array.from({ length: RELAY_CYCLES }, async () => {
      while (next < messages.length) {
        const batch = messages.slice(next, next + RELAY_BATCH);
        next += batch.length;
        await publishRaw(channel, queue, batch);
      }
    }),
  );
  const elapsed = performance.now() - started;
  const used = cpu(count - 1);
  await model.close();
  await admin.purgeQueue(queue);
  return { perSec: (count - 1) / (elapsed / 1000), ...used };
}

/**
 * Publishes `batch` raw with amqplib, mandatory and persistent, and awaits every confirm. The
 * properties and headers are what the publisher sends for an outbox row of a JSON payload
 * (content type, timestamp, message id, partition key), so the broker stores the same bytes.
 */
function publishRaw(
  channel: ConfirmChannel,
  queue: string,
  batch: ReadonlyArray<{ id: string; body: Buffer; key: string | null }>,
): Promise<void> {
  const timestamp = Math.floor(Date.now() / 1000);
  return Promise.all(
    batch.map(
      (m) =>
        new Promise<void>((resolve, reject) =>
          channel.publish(
            '',
            queue,
            m.body,
            {
              mandatory: true,
              persistent: true,
              messageId: m.id,
              contentType: JSON_TYPE,
              timestamp,
              headers: {
                'content-type': JSON_TYPE,
                'message-id': m.id,
                ...(m.key ? { 'partition-key': m.key } : {}),
              },
            },
            (error: unknown) => (error ? reject(error as Error) : resolve()),
          ),
        ),
    ),
  ).then(() => undefined);
}

/** The relay's work by hand: claim, publish raw with confirms, delete, commit; per second. */
async function handRelay(url: string, store: Store, admin: Channel, queue: string, count: number) {
  await fillOutbox(store, count, (n) => ({
    destination: queue,
    key: `key-${n % KEYS}`,
    payload: { n, body: 'x'.repeat(64) },
  }));
  const model = await connect(url);
  const channel = await model.createConfirmChannel();
  const outbox = store.names.table('outbox');
  let done = 0;
  const cpu = costMeter();
  const started = performance.now();
  await Promise.all(
    Array.from({ length: RELAY_CYCLES }, async () => {
      while (done < count) {
        const n = await store.knex.transaction(async (trx) => {
          const rows = rowsOf<{
            id: string;
            partition_key: string | null;
            message_id: string;
            payload: Buffer;
          }>(
            await trx.raw(
              `select id, partition_key, message_id, payload from ${outbox}
                where status = 'pending' order by id limit ? for update skip locked`,
              [RELAY_BATCH],
            ),
          );
          if (rows.length === 0) return 0;
          await publishRaw(
            channel,
            queue,
            rows.map((r) => ({ id: r.message_id, body: r.payload, key: r.partition_key })),
          );
          await trx.raw(`delete from ${outbox} where id = any(?::bigint[])`, [
            rows.map((r) => r.id),
          ]);
          return rows.length;
        });
        done += n;
        if (n === 0) await new Promise((r) => setTimeout(r, 5));
      }
    }),
  );
  const elapsed = performance.now() - started;
  const used = cpu(count);
  await model.close();
  await admin.purgeQueue(queue);
  return { perSec: count / (elapsed / 1000), ...used };
}

function outgoingMessages(queue: string, count: number): OutgoingMessage[] {
  const run = tag();
  return Array.from({ length: count }, (_, i) => ({
    messageId: `${run}-${i}`,
    destination: queue,
    key: `key-${i % KEYS}`,
    // What the outbox records for a JSON payload.
    headers: { 'content-type': JSON_TYPE },
    payload: Buffer.from(JSON.stringify({ n: i, body: 'x'.repeat(64) })),
  }));
}

/** `publish` batches of the publisher alone, two in flight; messages per second. */
async function publisherOnly(url: string, admin: Channel, queue: string, count: number) {
  const publisher = createRabbitPublisher({ url });
  const messages = outgoingMessages(queue, count);
  await publisher.publish(messages.slice(0, 1)); // connect before the clock starts
  let next = 1;
  const cpu = costMeter();
  const started = performance.now();
  await Promise.all(
    Array.from({ length: RELAY_CYCLES }, async () => {
      while (next < messages.length) {
        const batch = messages.slice(next, next + RELAY_BATCH);
        next += batch.length;
        const results = await publisher.publish(batch);
        if (results.some((r) => !r.ok)) throw new Error('a benchmark publish failed');
      }
    }),
  );
  const elapsed = performance.now() - started;
  const used = cpu(count - 1);
  await publisher.close();
  await admin.purgeQueue(queue);
  return { perSec: (count - 1) / (elapsed / 1000), ...used };
}

/** Runs both cases and prints the shared JSON line last. */
export async function main(): Promise<void> {
  const { databaseUrl, amqpUrl } = await ensureServices(['postgres', 'rabbitmq']);
  const schema = `bench_rabbit_${tag()}`;
  const store = await createStore({ connectionString: databaseUrl, schema, pool: { max: 12 } });
  await store.migrate();
  await store.knex.raw(
    `create table ${store.names.schema}."effects" (id bigserial primary key, message_id text, body text)`,
  );
  const model = await connect(amqpUrl);
  const admin = await model.createConfirmChannel();
  const queues: string[] = [];
  const topology: string[] = [];
  const fresh = async () => {
    const name = `jo-bench-${tag()}`;
    await admin.assertQueue(name, { durable: true });
    queues.push(name);
    return name;
  };
  try {
    const relayQueue = await fresh();
    const results = await measureCases(
      ROUNDS,
      [
        [
          'consumer',
          async () => {
            const queue = await fresh();
            await fillQueue(admin, queue, MESSAGES);
            topology.push(`${queue}.dlx`, `${queue}.dead`);
            return inboxConsumer(amqpUrl, store, queue, MESSAGES);
          },
          async () => {
            const queue = await fresh();
            await fillQueue(admin, queue, MESSAGES);
            return rawConsumer(amqpUrl, store, queue, MESSAGES);
          },
        ],
        [
          'relay',
          () => relayRun(amqpUrl, store, admin, relayQueue, RELAY_MESSAGES),
          () => handRelay(amqpUrl, store, admin, relayQueue, RELAY_MESSAGES),
        ],
        [
          'publisher',
          () => publisherOnly(amqpUrl, admin, relayQueue, RELAY_MESSAGES),
          () => rawPublish(amqpUrl, admin, relayQueue, RELAY_MESSAGES),
        ],
        [
          'relay-vs-raw-publish',
          () => relayRun(amqpUrl, store, admin, relayQueue, RELAY_MESSAGES),
          () => rawPublish(amqpUrl, admin, relayQueue, RELAY_MESSAGES),
        ],
      ],
      wantedCases('BENCH_RABBIT_CASES'),
      3,
    );
    printCostTable(results);
    console.log(JSON.stringify({ bench: 'rabbitmq', results }));
  } finally {
    for (const queue of queues) await admin.deleteQueue(queue);
    for (const name of topology) {
      if (name.endsWith('.dlx')) await admin.deleteExchange(name);
      else await admin.deleteQueue(name);
    }
    await model.close();
    await store.knex.raw(`drop schema ${store.names.schema} cascade`);
    await store.close();
  }
}
