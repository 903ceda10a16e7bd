/**
 * `pnpm bench kafka`: @justonce/kafka on the real broker and PostgreSQL, each case beside a
 * hand-written baseline in the same process and the same run.
 *
 * - consumer-batch: `createKafkaConsumer` in batch mode (one inbox transaction per 100
 *   records), beside a raw kafkajs `eachBatch` consumer that runs the same SQL by hand in one
 *   transaction per 100 records (the inbox's multi-row claim into its `inbox_records` table,
 *   `on conflict do nothing`, with a SHA-256 request hash; the business insert per new
 *   record) and then commits the offset.
 * - consumer-message: the same in per-message mode (one transaction per record, offsets
 *   committed per 100 records) beside the same per-record transaction by hand.
 * - consumer-batch-replay, consumer-message-replay: a replay after a rebalance. A consumer
 *   group reads the topic (untimed) and stops; the group's committed offsets are reset to the
 *   earliest; a new consumer in the same group, with the same inbox, reads every record again,
 *   each a duplicate, timed as above. The baseline is the same mode's first deliveries (a
 *   fresh group and inbox), so the ratio is the replay's throughput over the first delivery's.
 * - consumer-batch-watermark: the batch consumer with its inbox in `dedup: 'watermark'`
 *   mode (per partition, one watermark row updated per chunk; no row per record) beside the
 *   same consumer in the default `ids` mode, each on a fresh group and inbox of the same
 *   topic. With this case, one more untimed run per mode counts the rows each writes in the
 *   bench's schema (pg_stat_user_tables: inserted, updated and deleted, the business rows
 *   taken off) and prints them per message as `watermarkRows`, table by table.
 * - relay: the outbox relay publishing through `createKafkaPublisher`, beside a raw kafkajs
 *   producer sending the same records with the same batch size, concurrency, idempotence and
 *   acks (all in-sync replicas).
 * - relay-vs-hand: the relay (with `onPublished: 'delete'`) beside its work written by hand
 *   with raw kafkajs: as many loops as the relay's concurrency, each claiming a batch
 *   `for update skip locked`, sending it with the raw producer's settings, deleting the rows
 *   and committing; timed from the first claim to the last commit.
 *
 * - consumer-batch-platformatic, consumer-message-platformatic, relay-platformatic: the
 *   consumer-batch, consumer-message and relay cases with `client: 'platformatic'`
 *   (@platformatic/kafka), each beside its own raw baseline: the same work by hand with
 *   @platformatic/kafka (a `consume` stream with manual commits per 100 records of a
 *   partition; an idempotent `Producer` with the same batches, lanes and acks).
 *
 * Consumers are timed from the first batch handed to them (group joins are not counted) to
 * the last record's database commit; the relay from its start to the last record
 * acknowledged by the broker. Each case: a warm-up round, then BENCH_ROUNDS rounds (default
 * 6) alternating which side runs first. `perSec` and `baselinePerSec` are medians; `ratio` is
 * the median of per-round ratios. Environment: BENCH_KAFKA_MESSAGES (default 4 000; the
 * per-message case uses a third), BENCH_KAFKA_RELAY_MESSAGES (default 20 000), BENCH_ROUNDS,
 * BENCH_KAFKA_CASES (a comma-separated subset of consumer-batch, consumer-message,
 * consumer-batch-replay, consumer-message-replay, consumer-batch-watermark, relay,
 * relay-vs-hand, consumer-batch-platformatic, consumer-message-platformatic,
 * relay-platformatic), BENCH_ON_PUBLISHED (the relay case's onPublished, default delete as the
 * relay's), BENCH_RELAY_CONCURRENCY (the relay's loops and the raw sides' lanes, default 2).
 * The last line printed is the JSON result.
 */
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { Kafka, logLevel, type Consumer, type Producer } from 'kafkajs';
import {
  createInbox,
  createStore,
  rowsOf,
  type HandlerContext,
  type InboxDedupMode,
  type Store,
} from '@justonce/core';
import {
  createKafkaConsumer,
  createKafkaPublisher,
  platformaticClient,
  type KafkaClient,
  type KafkaClientName,
} from '@justonce/kafka';
import * as platformatic from '@platformatic/kafka';
import { ensureServices } from '../test-support/services';
import {
  benchRounds,
  byDestination,
  timedRelayRun,
  fillOutbox,
  handClaim,
  INBOX_RETENTION_MS,
  handRelayLoops,
  costMeter,
  reached,
  measureCases,
  printCostTable,
  rowsWritten,
  wantedCases,
  type Run,
} from './_support';

const CHUNK = 100;
const RELAY_BATCH = 200;
const RELAY_CONCURRENCY = Number(process.env.BENCH_RELAY_CONCURRENCY ?? 2);
const PARTITIONS = 3;
const GROUP = { sessionTimeout: 10_000, heartbeatInterval: 1_000, maxWaitTimeInMs: 100 };

interface Env {
  kafka: Kafka;
  brokers: string[];
  store: Store;
  effects: string;
  inboxRecords: string;
}
const tag = (): string => randomBytes(4).toString('hex');

/** Topics this run created, deleted again at its end. */
const created: string[] = [];

/** Creates `topic` and waits for its partition leaders, so no send pays for auto-creation. */
async function createTopic(kafka: Kafka, topic: string): Promise<void> {
  created.push(topic);
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({
    waitForLeaders: true,
    topics: [{ topic, numPartitions: PARTITIONS, replicationFactor: 1 }],
  });
  await admin.disconnect();
}

async function fillTopic(kafka: Kafka, topic: string, count: number): Promise<void> {
  await createTopic(kafka, topic);
  const producer = kafka.producer();
  await producer.connect();
  for (let start = 0; start < count; start += 1000) {
    await producer.send({
      topic,
      acks: -1,
      messages: Array.from({ length: Math.min(1000, count - start) }, (_, j) => {
        const i = start + j;
        return {
          key: `acct-${i % 97}`,
          value: JSON.stringify({ account: `acct-${i % 97}`, amountCents: 100 + i }),
          headers: { 'message-id': `${topic}-${i}` },
        };
      }),
    });
  }
  await producer.disconnect();
}

/** The client under test: the bench's kafkajs instance, or @platformatic/kafka on its brokers. */
function clientOf(env: Env, client: KafkaClientName): KafkaClient {
  return client === 'kafkajs'
    ? env.kafka
    : platformaticClient({ brokers: env.brokers, clientId: 'bench' });
}

/** Calls `onFirstBatch` when the client's consumer hands out its first batch. */
function timedClient(kafka: KafkaClient, onFirstBatch: () => void): KafkaClient {
  return {
    producer: (config) => kafka.producer(config),
    consumer: (config) => {
      const consumer = kafka.consumer(config);
      let first = true;
      return Object.assign(Object.create(consumer) as typeof consumer, {
        run: (run: Parameters<typeof consumer.run>[0]) =>
          consumer.run({
            ...run,
            eachBatch: (context) => {
              if (first) {
                first = false;
                onFirstBatch();
              }
              return run.eachBatch(context);
            },
          }),
      });
    },
  };
}

/** The inbox consumer; records per second. `name` is its group's and its inbox's. */
async function inboxRun(
  env: Env,
  topic: string,
  count: number,
  mode: 'batch' | 'message',
  name = `bench-${tag()}`,
  dedup: InboxDedupMode = 'ids',
  client: KafkaClientName = 'kafkajs',
): Promise<Run> {
  let started = 0;
  let cpu = costMeter(); // restarted with the clock at the first batch
  let done = 0;
  const consumer = createKafkaConsumer({
    kafka: timedClient(clientOf(env, client), () => {
      started = performance.now();
      cpu = costMeter();
    }),
    groupId: name,
    topics: [topic],
    fromBeginning: true,
    mode,
    batchSize: CHUNK,
    consumerConfig: GROUP,
    inbox: createInbox({ store: env.store, consumer: name, dedup }),
    dedup,
    handler: async (ctx: HandlerContext) => {
      await ctx.trx.raw(`insert into ${env.effects} (message_id, body) values (?, ?)`, [
        ctx.messageId,
        Buffer.from(ctx.message.body).toString(),
      ]);
    },
    // Processed or duplicate, and its offset committed.
    onSettled: (event) => {
      if (event.action === 'acked') done++;
    },
  });
  await consumer.start();
  await reached(() => done, count);
  const elapsed = performance.now() - started;
  const used = cpu(count);
  await consumer.stop();
  return { perSec: count / (elapsed / 1000), ...used };
}

/**
 * A replay after a rebalance: a group reads the topic's `count` records (untimed) and stops,
 * its committed offsets go back to the earliest, and a new consumer of the group with the
 * same inbox reads them all again (timed): every record is a duplicate.
 */
async function replayRun(
  env: Env,
  topic: string,
  count: number,
  mode: 'batch' | 'message',
): Promise<Run> {
  const name = `bench-replay-${tag()}`;
  await inboxRun(env, topic, count, mode, name);
  const admin = env.kafka.admin();
  await admin.connect();
  try {
    await admin.resetOffsets({ groupId: name, topic, earliest: true });
  } finally {
    await admin.disconnect();
  }
  return inboxRun(env, topic, count, mode, name);
}

/** The hand-written consumer: the same rows, the same transactions, by hand. */
async function rawRun(
  env: Env,
  topic: string,
  count: number,
  mode: 'batch' | 'message',
): Promise<Run> {
  let started = 0;
  let cpu = costMeter(); // restarted with the clock at the first batch
  let done = 0;
  const name = `bench-raw-${tag()}`;
  const consumer: Consumer = env.kafka.consumer({ groupId: name, ...GROUP });
  await consumer.connect();
  await consumer.subscribe({ topics: [topic], fromBeginning: true });
  const write = async (
    trx: Knex.Transaction,
    rows: Array<{ id: string; body: string }>,
  ): Promise<void> => {
    const isNew = await handClaim(
      trx,
      env.inboxRecords,
      name,
      INBOX_RETENTION_MS,
      rows.map((r) => ({ id: r.id, hash: createHash('sha256').update(r.body).digest('hex') })),
    );
    for (const row of rows) {
      if (isNew.has(row.id)) {
        await trx.raw(`insert into ${env.effects} (message_id, body) values (?, ?)`, [
          row.id,
          row.body,
        ]);
      }
    }
  };
  await consumer.run({
    autoCommit: false,
    eachBatchAutoResolve: false,
    eachBatch: async ({ batch, heartbeat, commitOffsetsIfNecessary, resolveOffset }) => {
      if (started === 0) {
        started = performance.now();
        cpu = costMeter();
      }
      for (let i = 0; i < batch.messages.length; i += CHUNK) {
        const chunk = batch.messages.slice(i, i + CHUNK).map((m) => ({
          offset: m.offset,
          id: m.headers!['message-id']!.toString(),
          body: m.value!.toString(),
        }));
        if (mode === 'batch') {
          await env.store.knex.transaction((trx) => write(trx, chunk));
        } else {
          for (const row of chunk) await env.store.knex.transaction((trx) => write(trx, [row]));
        }
        done += chunk.length;
        const last = chunk[chunk.length - 1]!.offset;
        resolveOffset(last);
        await commitOffsetsIfNecessary({
          topics: [
            {
              topic: batch.topic,
              partitions: [{ partition: batch.partition, offset: (BigInt(last) + 1n).toString() }],
            },
          ],
        });
        await heartbeat();
      }
    },
  });
  await reached(() => done, count);
  const elapsed = performance.now() - started;
  const used = cpu(count);
  await consumer.disconnect();
  return { perSec: count / (elapsed / 1000), ...used };
}

/** Rows written so far per table of `schema` (inserted + updated + deleted), once settled. */
async function writesByTable(store: Store, schema: string): Promise<Map<string, number>> {
  await rowsWritten(store.knex, schema, 10);
  const result = await store.knex.raw(
    `select relname, (n_tup_ins + n_tup_upd + n_tup_del)::bigint as n
       from pg_stat_user_tables where schemaname = ?`,
    [schema],
  );
  return new Map(
    rowsOf<{ relname: string; n: string }>(result).map((r) => [r.relname, Number(r.n)]),
  );
}

/**
 * Rows the batch consumer writes per record in each dedup mode, table by table (the business
 * table left out): one untimed run of `count` records per mode, on a fresh group and inbox.
 */
async function rowsPerRecord(
  env: Env,
  schema: string,
  topic: string,
  count: number,
): Promise<Record<string, Record<string, number>>> {
  const out: Record<string, Record<string, number>> = {};
  for (const dedup of ['ids', 'watermark'] as const) {
    const before = await writesByTable(env.store, schema);
    await inboxRun(env, topic, count, 'batch', `bench-rows-${tag()}`, dedup);
    const after = await writesByTable(env.store, schema);
    const perTable: Record<string, number> = {};
    for (const [table, n] of after) {
      const written = n - (before.get(table) ?? 0);
      if (table !== 'bench_effects' && written > 0) {
        perTable[table] = Math.round((written / count) * 1000) / 1000;
      }
    }
    out[dedup] = perTable;
  }
  return out;
}

/** An empty outbox holding `count` events for `topic`, as both relay sides start from. */
async function fillRelayOutbox(env: Env, topic: string, count: number): Promise<void> {
  await env.store.knex.raw(`truncate ${env.store.names.table('outbox')}`);
  await fillOutbox(env.store, count, (n) => ({
    destination: topic,
    key: `acct-${n % 50}`,
    payload: { n },
    headers: { 'correlation-id': `c-${n}` },
  }));
}

async function relayRun(
  env: Env,
  count: number,
  onPublished: 'keep' | 'delete',
  client: KafkaClientName = 'kafkajs',
): Promise<Run> {
  const topic = `bench-relay-${tag()}`;
  await createTopic(env.kafka, topic);
  await fillRelayOutbox(env, topic, count);
  const kafkaPublisher = createKafkaPublisher({ kafka: clientOf(env, client) });
  // Connected before timing, as the raw producer is.
  await kafkaPublisher.connect();
  return timedRelayRun(env.store, kafkaPublisher, count, {
    batchSize: RELAY_BATCH,
    concurrency: RELAY_CONCURRENCY,
    onPublished,
  });
}

/** The producer both hand-written sides use: the relay publisher's own settings. */
function rawProducer(env: Env): Producer {
  return env.kafka.producer({ idempotent: true, maxInFlightRequests: 1, retry: { retries: 5 } });
}

async function rawProducerRun(env: Env, count: number): Promise<Run> {
  const topic = `bench-raw-${tag()}`;
  await createTopic(env.kafka, topic);
  const producer = rawProducer(env);
  await producer.connect();
  const records = Array.from({ length: count }, (_, n) => ({
    key: `acct-${n % 50}`,
    value: JSON.stringify({ n }),
    headers: {
      'content-type': 'application/json',
      'correlation-id': `c-${n}`,
      'message-id': randomUUID(),
    },
  }));
  const cpu = costMeter();
  const started = performance.now();
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < records.length) {
      const batch = records.slice(next, next + RELAY_BATCH);
      next += batch.length;
      await producer.send({ topic, acks: -1, messages: batch });
    }
  };
  await Promise.all(Array.from({ length: RELAY_CONCURRENCY }, lane));
  const elapsed = performance.now() - started;
  const used = cpu(count);
  await producer.disconnect();
  return { perSec: count / (elapsed / 1000), ...used };
}

/**
 * The relay's work by hand with raw kafkajs: RELAY_CONCURRENCY loops, each claiming up to
 * RELAY_BATCH pending rows, sending them as the raw producer does (key = partition key, the
 * row's headers plus `message-id`), deleting them and committing.
 */
async function handRelayRun(env: Env, count: number): Promise<Run> {
  const topic = `bench-hand-${tag()}`;
  await createTopic(env.kafka, topic);
  await fillRelayOutbox(env, topic, count);
  const producer = rawProducer(env);
  await producer.connect();
  const cpu = costMeter();
  const elapsed = await handRelayLoops(env.store, {
    loops: RELAY_CONCURRENCY,
    batchSize: RELAY_BATCH,
    expected: count,
    publish: async (rows) => {
      await Promise.all(
        [...byDestination(rows)].map(([destination, group]) =>
          producer.send({
            topic: destination,
            acks: -1,
            messages: group.map((r) => ({
              key: r.partition_key,
              value: r.payload,
              headers: { ...r.headers, 'message-id': r.message_id },
            })),
          }),
        ),
      );
    },
  });
  const used = cpu(count);
  await producer.disconnect();
  return { perSec: count / (elapsed / 1000), ...used };
}

/**
 * The hand-written consumer on @platformatic/kafka: a `consume` stream from the earliest
 * offset, records gathered per partition and written in chunks of CHUNK (the same SQL as
 * {@link rawRun}), each partition's offset committed after its chunk.
 */
async function rawPlatformaticRun(
  env: Env,
  topic: string,
  count: number,
  mode: 'batch' | 'message',
): Promise<Run> {
  let started = 0;
  let cpu = costMeter();
  let done = 0;
  const name = `bench-raw-plt-${tag()}`;
  const consumer = new platformatic.Consumer({
    clientId: 'bench-raw',
    bootstrapBrokers: env.brokers,
    groupId: name,
    autocommit: false,
    sessionTimeout: GROUP.sessionTimeout,
    heartbeatInterval: GROUP.heartbeatInterval,
    maxWaitTime: GROUP.maxWaitTimeInMs,
  });
  const stream = await consumer.consume({
    topics: [topic],
    mode: 'committed',
    fallbackMode: 'earliest',
    autocommit: false,
  });
  type Row = { id: string; body: string; offset: bigint; leaderEpoch: number };
  const write = async (trx: Knex.Transaction, rows: Row[]): Promise<void> => {
    const isNew = await handClaim(
      trx,
      env.inboxRecords,
      name,
      INBOX_RETENTION_MS,
      rows.map((r) => ({ id: r.id, hash: createHash('sha256').update(r.body).digest('hex') })),
    );
    for (const row of rows) {
      if (isNew.has(row.id)) {
        await trx.raw(`insert into ${env.effects} (message_id, body) values (?, ?)`, [
          row.id,
          row.body,
        ]);
      }
    }
  };
  const pending = new Map<number, Row[]>();
  let received = 0;
  const flush = async (partition: number): Promise<void> => {
    const rows = pending.get(partition) ?? [];
    pending.delete(partition);
    if (rows.length === 0) return;
    if (mode === 'batch') await env.store.knex.transaction((trx) => write(trx, rows));
    else for (const row of rows) await env.store.knex.transaction((trx) => write(trx, [row]));
    const last = rows[rows.length - 1]!;
    await consumer.commit({
      offsets: [{ topic, partition, offset: last.offset + 1n, leaderEpoch: last.leaderEpoch }],
    });
    done += rows.length;
  };
  for await (const m of stream) {
    if (started === 0) {
      started = performance.now();
      cpu = costMeter();
    }
    const rows = pending.get(m.partition) ?? [];
    pending.set(m.partition, rows);
    rows.push({
      id: m.headers.get(Buffer.from('message-id'))?.toString() ?? headerOf(m.headerEntries),
      body: m.value!.toString(),
      offset: m.offset,
      leaderEpoch: m.leaderEpoch,
    });
    received++;
    if (rows.length >= CHUNK) await flush(m.partition);
    if (received >= count) {
      for (const partition of [...pending.keys()]) await flush(partition);
      break;
    }
  }
  await reached(() => done, count);
  const elapsed = performance.now() - started;
  const used = cpu(count);
  await stream.close().catch(() => undefined);
  await consumer.close(true);
  return { perSec: count / (elapsed / 1000), ...used };
}

/** The `message-id` header among raw header entries (Buffer keys compare by identity). */
function headerOf(entries: ReadonlyArray<[Buffer, Buffer]>): string {
  const found = entries.find(([k]) => k.toString() === 'message-id');
  return found?.[1].toString() ?? '';
}

/** The relay publisher's settings by hand on @platformatic/kafka: same batches, lanes, acks. */
async function rawPlatformaticProducerRun(env: Env, count: number): Promise<Run> {
  const topic = `bench-raw-plt-${tag()}`;
  await createTopic(env.kafka, topic);
  const producer = new platformatic.Producer({
    clientId: 'bench-raw',
    bootstrapBrokers: env.brokers,
    idempotent: true,
    acks: platformatic.ProduceAcks.ALL,
    retries: 5,
    partitioner: platformatic.compatibilityPartitioner,
  });
  await producer.initIdempotentProducer({});
  const records = Array.from({ length: count }, (_, n) => ({
    topic,
    key: Buffer.from(`acct-${n % 50}`),
    value: Buffer.from(JSON.stringify({ n })),
    headers: new Map([
      [Buffer.from('content-type'), Buffer.from('application/json')],
      [Buffer.from('correlation-id'), Buffer.from(`c-${n}`)],
      [Buffer.from('message-id'), Buffer.from(randomUUID())],
    ]),
  }));
  const cpu = costMeter();
  const started = performance.now();
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < records.length) {
      const batch = records.slice(next, next + RELAY_BATCH);
      next += batch.length;
      await producer.send({ messages: batch });
    }
  };
  await Promise.all(Array.from({ length: RELAY_CONCURRENCY }, lane));
  const elapsed = performance.now() - started;
  const used = cpu(count);
  await producer.close();
  return { perSec: count / (elapsed / 1000), ...used };
}

/** Runs every case and prints the JSON line last. */
export async function main(): Promise<void> {
  const { databaseUrl, kafkaBrokers } = await ensureServices(['postgres', 'kafka']);
  const count = Number(process.env.BENCH_KAFKA_MESSAGES ?? 4000);
  const relayCount = Number(process.env.BENCH_KAFKA_RELAY_MESSAGES ?? 20_000);
  const rounds = benchRounds();
  const schema = `bench_kafka_${tag()}`;
  const store = await createStore({ connectionString: databaseUrl, schema, pool: { max: 10 } });
  const kafka = new Kafka({ clientId: 'bench', brokers: kafkaBrokers, logLevel: logLevel.NOTHING });
  try {
    await store.migrate();
    const effects = `"${schema}"."bench_effects"`;
    const inboxRecords = store.names.table('inbox_records');
    await store.knex.raw(
      `create table ${effects} (id bigserial primary key, message_id text not null, body text)`,
    );
    const env: Env = { kafka, brokers: kafkaBrokers, store, effects, inboxRecords };
    const batchTopic = `bench-batch-${tag()}`;
    const messageTopic = `bench-message-${tag()}`;
    const perMessage = Math.max(300, Math.floor(count / 3));
    const wanted = wantedCases('BENCH_KAFKA_CASES');
    if (
      wanted('consumer-batch') ||
      wanted('consumer-batch-replay') ||
      wanted('consumer-batch-watermark') ||
      wanted('consumer-batch-platformatic')
    ) {
      await fillTopic(kafka, batchTopic, count);
    }
    if (
      wanted('consumer-message') ||
      wanted('consumer-message-replay') ||
      wanted('consumer-message-platformatic')
    ) {
      await fillTopic(kafka, messageTopic, perMessage);
    }
    const onPublished = process.env.BENCH_ON_PUBLISHED === 'keep' ? 'keep' : 'delete';
    const results = await measureCases(
      rounds,
      [
        [
          'consumer-batch',
          () => inboxRun(env, batchTopic, count, 'batch'),
          () => rawRun(env, batchTopic, count, 'batch'),
        ],
        [
          'consumer-message',
          () => inboxRun(env, messageTopic, perMessage, 'message'),
          () => rawRun(env, messageTopic, perMessage, 'message'),
        ],
        [
          'consumer-batch-replay',
          () => replayRun(env, batchTopic, count, 'batch'),
          () => inboxRun(env, batchTopic, count, 'batch'),
        ],
        [
          'consumer-message-replay',
          () => replayRun(env, messageTopic, perMessage, 'message'),
          () => inboxRun(env, messageTopic, perMessage, 'message'),
        ],
        [
          'consumer-batch-watermark',
          () => inboxRun(env, batchTopic, count, 'batch', undefined, 'watermark'),
          () => inboxRun(env, batchTopic, count, 'batch', undefined, 'ids'),
        ],
        [
          'relay',
          () => relayRun(env, relayCount, onPublished),
          () => rawProducerRun(env, relayCount),
        ],
        [
          'relay-vs-hand',
          () => relayRun(env, relayCount, 'delete'),
          () => handRelayRun(env, relayCount),
        ],
        [
          'consumer-batch-platformatic',
          () => inboxRun(env, batchTopic, count, 'batch', undefined, 'ids', 'platformatic'),
          () => rawPlatformaticRun(env, batchTopic, count, 'batch'),
        ],
        [
          'consumer-message-platformatic',
          () =>
            inboxRun(env, messageTopic, perMessage, 'message', undefined, 'ids', 'platformatic'),
          () => rawPlatformaticRun(env, messageTopic, perMessage, 'message'),
        ],
        [
          'relay-platformatic',
          () => relayRun(env, relayCount, onPublished, 'platformatic'),
          () => rawPlatformaticProducerRun(env, relayCount),
        ],
      ],
      wanted,
    );
    printCostTable(results);
    const watermarkRows = wanted('consumer-batch-watermark')
      ? await rowsPerRecord(env, schema, batchTopic, count)
      : undefined;
    if (watermarkRows !== undefined) {
      console.log(
        `rows written per record by the batch consumer: ${JSON.stringify(watermarkRows)}`,
      );
    }
    console.log(
      JSON.stringify({
        bench: 'kafka',
        results,
        ...(watermarkRows === undefined ? {} : { watermarkRows }),
      }),
    );
  } finally {
    await store.knex.raw(`drop schema if exists "${schema}" cascade`).catch(() => undefined);
    await store.close();
    const admin = kafka.admin();
    await admin
      .connect()
      .then(() => admin.deleteTopics({ topics: created.splice(0) }))
      .catch(() => undefined)
      .finally(() => admin.disconnect());
  }
}
