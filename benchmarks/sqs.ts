/**
 * `pnpm bench sqs`: @justonce/sqs on ElasticMQ and PostgreSQL, each case beside a baseline
 * written by hand and measured in the same process and run.
 *
 * - consumer-message: `createSqsConsumer` in message mode (one inbox transaction per message,
 *   concurrency 10), beside a hand-written loop with as many pollers that runs the inbox's
 *   statements by hand, as the Kafka and RabbitMQ baselines do: ReceiveMessage (10 at a
 *   time, short polls), one transaction per message with the inbox's dedup insert into
 *   `inbox_records` (`on conflict do nothing`, a SHA-256 of the body as fingerprint) and the
 *   same business row, then DeleteMessageBatch for the ten.
 * - consumer-batch: the consumer in batch mode (one `processBatch` transaction per receive
 *   batch, concurrency 20), beside the same loop writing each receive batch in one
 *   transaction (the inbox's multi-row dedup insert, then the business rows of the new ids).
 * - relay: the outbox relay publishing through `createSqsPublisher`, beside raw
 *   SendMessageBatch calls of the same messages (ten per request, the same number of
 *   requests in flight as the relay's cycles times the publisher's concurrency).
 * - relay-vs-hand: the relay (with `onPublished: 'delete'`) beside its work written by hand:
 *   as many loops as the relay's cycles, each claiming a batch `for update skip locked`,
 *   sending it with SendMessageBatch in tens (as many requests in flight per batch as the
 *   publisher's concurrency), deleting the rows and committing.
 *
 * The consumer is timed from `start` resolving (the queue is described) to the last message
 * deleted; the hand loop from its first receive to its last delete; the relay from `start`
 * to the last message acknowledged by SQS; the hand-written relay from its first claim to
 * its last commit. A warm-up round first, then BENCH_ROUNDS rounds (default 6) alternating
 * which side goes first; `perSec` and `baselinePerSec` are medians, `ratio` the median of
 * per-round ratios. BENCH_SQS_MESSAGES sets the consumer's messages per round (default 1 000),
 * BENCH_SQS_RELAY_MESSAGES the relay's (default 20 000: a run of 5 000 lasts a quarter of a
 * second on a fast machine, and whichever side ran second in a round often came out a quarter
 * faster or more, so the ratio measured start-up rather than the steady state a relay runs in);
 * the relay's publisher shares the raw loop's warm client. BENCH_SQS_CASES picks a comma-
 * separated subset of consumer-message, consumer-batch, relay and relay-vs-hand. The last line
 * printed is the JSON.
 */
import { createHash, randomBytes } from 'node:crypto';
import {
  CreateQueueCommand,
  DeleteMessageBatchCommand,
  DeleteQueueCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  SQSClient,
  type Message,
} from '@aws-sdk/client-sqs';
import { createInbox, createStore, type Store } from '@justonce/core';
import { createSqsPublisher, createSqsConsumer } from '@justonce/sqs';
import { ensureServices } from '../test-support/services';
import {
  benchRounds,
  byDestination,
  timedRelayRun,
  fillOutbox,
  handClaim,
  handClaimOne,
  INBOX_RETENTION_MS,
  handRelayLoops,
  costMeter,
  reached,
  type Run,
  type ClaimedRow,
  measureCases,
  printCostTable,
  wantedCases,
} from './_support';

/** Consumer concurrency per mode. */
const CONCURRENCY = { message: 10, batch: 20 } as const;
type Mode = keyof typeof CONCURRENCY;
/**
 * Pollers of the hand loop: as many receive loops as the consumer runs (one per ten of
 * concurrency), each receiving ten messages at a time and handling them before the next
 * receive. The consumer also receives ahead and deletes asynchronously; the hand loop does not.
 */
const pollers = (mode: Mode): number => Math.ceil(CONCURRENCY[mode] / 10);
const RELAY_BATCH = 200;
const RELAY_CONCURRENCY = Number(process.env.BENCH_RELAY_CONCURRENCY ?? 2);
const PUBLISHER_CONCURRENCY = Number(process.env.BENCH_PUBLISHER_CONCURRENCY ?? 4);

interface Bench {
  sqs: SQSClient;
  store: Store;
  effects: string;
  queues: string[];
}

const tag = (): string => randomBytes(4).toString('hex');
/** Creates a standard queue named after `label` and a random tag; resolves to its URL. */
async function createQueue(b: Bench, label: string): Promise<string> {
  const { QueueUrl } = await b.sqs.send(
    new CreateQueueCommand({ QueueName: `bench-${label}-${tag()}` }),
  );
  if (!QueueUrl) throw new Error('no queue URL');
  b.queues.push(QueueUrl);
  return QueueUrl;
}

/**
 * Deletes a run's queue once the run is timed: ElasticMQ keeps every message in its JVM heap,
 * and a backlog left by earlier rounds would make later rounds pay for its garbage collection.
 */
async function dropQueue(b: Bench, queueUrl: string): Promise<void> {
  await b.sqs.send(new DeleteQueueCommand({ QueueUrl: queueUrl }));
  b.queues.splice(b.queues.indexOf(queueUrl), 1);
}

/** A queue holding `count` messages, each with a unique `message-id` attribute. */
async function filledQueue(b: Bench, count: number): Promise<string> {
  const queueUrl = await createQueue(b, 'in');
  const requests: Promise<unknown>[] = [];
  for (let start = 0; start < count; start += 10) {
    requests.push(
      b.sqs.send(
        new SendMessageBatchCommand({
          QueueUrl: queueUrl,
          Entries: Array.from({ length: Math.min(10, count - start) }, (_, j) => ({
            Id: `e${j}`,
            MessageBody: JSON.stringify({ account: `acct-${(start + j) % 97}`, cents: start + j }),
            MessageAttributes: {
              'message-id': { DataType: 'String', StringValue: `${queueUrl}#${start + j}` },
            },
          })),
        }),
      ),
    );
    if (requests.length >= 8) await Promise.all(requests.splice(0));
  }
  await Promise.all(requests);
  return queueUrl;
}

async function consumerRun(b: Bench, count: number, mode: Mode): Promise<Run> {
  const queueUrl = await filledQueue(b, count);
  let deleted = 0;
  // The same warm client as the hand loop: a consumer runs for hours on one client, and a new
  // client's first requests (connections, per-client set-up) would be charged to 1 000 messages.
  const consumer = createSqsConsumer({
    client: b.sqs,
    queueUrl,
    mode,
    concurrency: CONCURRENCY[mode],
    waitTimeSeconds: 1,
    inbox: createInbox({ store: b.store, consumer: `bench-${tag()}` }),
    handler: async (ctx) => {
      await ctx.trx.raw(`insert into ${b.effects} (message_id, body) values (?, ?)`, [
        ctx.messageId,
        String(ctx.message.body),
      ]);
    },
    onSettled: (event) => {
      if (event.action === 'acked') deleted++;
    },
  });
  await consumer.start();
  const cpu = costMeter();
  const started = performance.now();
  await reached(() => deleted, count);
  const elapsed = performance.now() - started;
  const used = cpu(count);
  await consumer.stop();
  return { perSec: count / (elapsed / 1000), ...used };
}

/**
 * The hand-written loop: receive ten; one transaction per message (`message`, the inbox's
 * single-row dedup insert) or one for the ten (`batch`, its multi-row one); delete the ten.
 * A first delivery has no attempt counter to clear, so neither side touches one.
 */
async function rawConsumerRun(b: Bench, count: number, mode: Mode): Promise<Run> {
  const queueUrl = await filledQueue(b, count);
  const consumer = `bench-raw-${tag()}`;
  const inboxRecords = b.store.names.table('inbox_records');
  let deleted = 0;
  const write = (messages: readonly Message[]) =>
    b.store.knex.transaction(async (trx) => {
      const rows = messages.map((m) => {
        const body = m.Body ?? '';
        return {
          id: m.MessageAttributes?.['message-id']?.StringValue ?? m.MessageId!,
          body,
          hash: createHash('sha256').update(body).digest('hex'),
        };
      });
      let isNew: Set<string>;
      if (mode === 'batch') {
        isNew = await handClaim(trx, inboxRecords, consumer, INBOX_RETENTION_MS, rows);
      } else {
        const [row] = rows as [(typeof rows)[number]];
        const fresh = await handClaimOne(trx, inboxRecords, consumer, INBOX_RETENTION_MS, row);
        isNew = new Set(fresh ? [row.id] : []);
      }
      for (const row of rows) {
        if (!isNew.has(row.id)) continue;
        await trx.raw(`insert into ${b.effects} (message_id, body) values (?, ?)`, [
          row.id,
          row.body,
        ]);
      }
    });
  const poller = async (): Promise<void> => {
    while (deleted < count) {
      const { Messages = [] } = await b.sqs.send(
        new ReceiveMessageCommand({
          QueueUrl: queueUrl,
          MaxNumberOfMessages: 10,
          // Short polls: the queue starts full, and on ElasticMQ two long polls waiting at once
          // took about 12 ms each even with messages ready (1 ms for one poller alone).
          WaitTimeSeconds: 0,
          MessageAttributeNames: ['All'],
          MessageSystemAttributeNames: ['ApproximateReceiveCount'],
        }),
      );
      if (Messages.length === 0) continue;
      if (mode === 'batch') await write(Messages);
      else await Promise.all(Messages.map((m) => write([m])));
      await b.sqs.send(
        new DeleteMessageBatchCommand({
          QueueUrl: queueUrl,
          Entries: Messages.map((m, i) => ({ Id: `d${i}`, ReceiptHandle: m.ReceiptHandle })),
        }),
      );
      deleted += Messages.length;
    }
  };
  const cpu = costMeter();
  const started = performance.now();
  await Promise.all(Array.from({ length: pollers(mode) }, poller));
  const elapsed = performance.now() - started;
  const used = cpu(count);
  return { perSec: count / (elapsed / 1000), ...used };
}

function body(n: number): string {
  return JSON.stringify({ account: `acct-${n % 50}`, cents: n });
}

/** An empty outbox holding `count` events for `queueUrl`, as both relay sides start from. */
async function fillRelayOutbox(b: Bench, queueUrl: string, count: number): Promise<void> {
  await b.store.knex.raw(`truncate ${b.store.names.table('outbox')}`);
  await fillOutbox(b.store, count, (n) => ({
    destination: queueUrl,
    key: `acct-${n % 50}`,
    payload: body(n),
    headers: { 'correlation-id': `c-${n}` },
  }));
}

async function relayRun(b: Bench, count: number, onPublished: 'keep' | 'delete'): Promise<Run> {
  const queueUrl = await createQueue(b, 'relay');
  await fillRelayOutbox(b, queueUrl, count);
  // The same warm client as the raw loop, so neither pays for opening connections.
  const run = await timedRelayRun(
    b.store,
    createSqsPublisher({ client: b.sqs, concurrency: PUBLISHER_CONCURRENCY }),
    count,
    { batchSize: RELAY_BATCH, concurrency: RELAY_CONCURRENCY, onPublished },
  );
  await dropQueue(b, queueUrl);
  return run;
}

async function rawSendRun(b: Bench, count: number): Promise<Run> {
  const queueUrl = await createQueue(b, 'raw');
  const entries = Array.from({ length: count }, (_, n) => ({
    Id: `e${n % 10}`,
    MessageBody: body(n),
    MessageAttributes: {
      'correlation-id': { DataType: 'String', StringValue: `c-${n}` },
      'message-id': { DataType: 'String', StringValue: `${queueUrl}#${n}` },
    },
  }));
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < entries.length) {
      const batch = entries.slice(next, next + 10);
      next += batch.length;
      const response = await b.sqs.send(
        new SendMessageBatchCommand({ QueueUrl: queueUrl, Entries: batch }),
      );
      if (response.Failed?.length) throw new Error(JSON.stringify(response.Failed));
    }
  };
  const cpu = costMeter();
  const started = performance.now();
  await Promise.all(Array.from({ length: RELAY_CONCURRENCY * PUBLISHER_CONCURRENCY }, lane));
  const elapsed = performance.now() - started;
  const used = cpu(count);
  await dropQueue(b, queueUrl);
  return { perSec: count / (elapsed / 1000), ...used };
}

/**
 * The relay's work by hand: RELAY_CONCURRENCY loops, each claiming up to RELAY_BATCH pending
 * rows, sending them with SendMessageBatch in tens, PUBLISHER_CONCURRENCY requests in flight
 * (attributes: the row's headers plus `message-id`), deleting them and committing.
 */
async function handRelayRun(b: Bench, count: number): Promise<Run> {
  const queueUrl = await createQueue(b, 'hand');
  await fillRelayOutbox(b, queueUrl, count);
  const cpu = costMeter();
  const elapsed = await handRelayLoops(b.store, {
    loops: RELAY_CONCURRENCY,
    batchSize: RELAY_BATCH,
    expected: count,
    publish: async (rows) => {
      const requests: Array<{ queueUrl: string; rows: ClaimedRow[] }> = [];
      for (const [destination, group] of byDestination(rows)) {
        for (let i = 0; i < group.length; i += 10) {
          requests.push({ queueUrl: destination, rows: group.slice(i, i + 10) });
        }
      }
      let next = 0;
      const lane = async (): Promise<void> => {
        while (next < requests.length) {
          const request = requests[next++]!;
          const response = await b.sqs.send(
            new SendMessageBatchCommand({
              QueueUrl: request.queueUrl,
              Entries: request.rows.map((r, j) => ({
                Id: `e${j}`,
                MessageBody: r.payload.toString('utf8'),
                MessageAttributes: Object.fromEntries(
                  Object.entries({ ...r.headers, 'message-id': r.message_id }).map(
                    ([name, value]) => [name, { DataType: 'String', StringValue: value }],
                  ),
                ),
              })),
            }),
          );
          if (response.Failed?.length) throw new Error(JSON.stringify(response.Failed));
        }
      };
      await Promise.all(Array.from({ length: PUBLISHER_CONCURRENCY }, lane));
    },
  });
  const used = cpu(count);
  await dropQueue(b, queueUrl);
  return { perSec: count / (elapsed / 1000), ...used };
}

/** Runs both cases and prints the JSON line last. */
export async function main(): Promise<void> {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  const { databaseUrl, sqsEndpoint } = await ensureServices(['postgres', 'sqs']);
  const count = Number(process.env.BENCH_SQS_MESSAGES ?? 1000);
  const relayCount = Number(process.env.BENCH_SQS_RELAY_MESSAGES ?? 20_000);
  const rounds = benchRounds();
  const schema = `bench_sqs_${tag()}`;
  const clientConfig = {
    endpoint: sqsEndpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'x', secretAccessKey: 'x' },
  };
  const store = await createStore({ connectionString: databaseUrl, schema, pool: { max: 12 } });
  const b: Bench = {
    sqs: new SQSClient(clientConfig),
    store,
    effects: `"${schema}"."bench_effects"`,
    queues: [],
  };
  try {
    await store.migrate();
    await store.knex.raw(
      `create table ${b.effects} (id bigserial primary key, message_id text not null, body text)`,
    );
    const results = await measureCases(
      rounds,
      [
        [
          'consumer-message',
          () => consumerRun(b, count, 'message'),
          () => rawConsumerRun(b, count, 'message'),
        ],
        [
          'consumer-batch',
          () => consumerRun(b, count, 'batch'),
          () => rawConsumerRun(b, count, 'batch'),
        ],
        ['relay', () => relayRun(b, relayCount, 'delete'), () => rawSendRun(b, relayCount)],
        [
          'relay-vs-hand',
          () => relayRun(b, relayCount, 'delete'),
          () => handRelayRun(b, relayCount),
        ],
      ],
      wantedCases('BENCH_SQS_CASES'),
    );
    printCostTable(results);
    console.log(JSON.stringify({ bench: 'sqs', results }));
  } finally {
    for (const queueUrl of b.queues) {
      await b.sqs.send(new DeleteQueueCommand({ QueueUrl: queueUrl })).catch(() => undefined);
    }
    b.sqs.destroy();
    await store.knex.raw(`drop schema if exists "${schema}" cascade`).catch(() => undefined);
    await store.close();
  }
}
