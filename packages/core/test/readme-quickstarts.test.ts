import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { CreateQueueCommand, SQSClient } from '@aws-sdk/client-sqs';
import { Kafka, logLevel, type Admin, type Consumer as KafkaReader } from 'kafkajs';
import { Client } from 'pg';
import * as core from '@justonce/core';
import * as kafka from '@justonce/kafka';
import * as rabbitmq from '@justonce/rabbitmq';
import * as sqs from '@justonce/sqs';
import { databaseUrl } from '../../../test-support/services';
import { waitFor } from '../../../test-support/wait-for';
import {
  expectSuccess,
  killPrograms,
  runProgram,
  writeLoader,
  type ProgramRun,
} from './fixtures/doc-programs';
import { extractSnippets, type Snippet } from './fixtures/doc-snippets';

/**
 * The README's quick starts run, as written, against the local services (`pnpm services:up`):
 * each program is the README's blocks verbatim, between a prologue and an epilogue of this
 * file's own. A consumer quick start is the shared block (store, inbox, handler) and one
 * broker block; its epilogue sends one order through the transport's own publisher, waits for
 * the handler's invoice, stops the consumer and closes the store. The publishing quick start
 * is its block after the shared block's store lines; its epilogue waits until the relay has
 * published the event, stops it and closes what is open, and this file reads the event back
 * from Kafka. The programs run as child processes, all four at once, and must exit on their
 * own with code 0: a handle left open would keep one running until its timeout.
 *
 * What the README assumes exists is created here first: the Kafka topic and SQS queue
 * `orders` (RabbitMQ's consumer declares its queue itself) and the `orders` table. The fixed
 * names (`billing`, `orders`, `invoices` in the public schema) are used by no other test; the
 * order ids are fresh on every run.
 */

const ROOT = join(__dirname, '..', '..', '..');

/** The addresses the README's blocks connect to, by the variable the global setup exports. */
const README_ADDRESSES = {
  KAFKA_BROKERS: '127.0.0.1:39092',
  SQS_ENDPOINT: 'http://127.0.0.1:39324',
  AMQP_URL: 'amqp://guest:guest@127.0.0.1:5672',
} as const;
/** The SQS block's queue: ElasticMQ's URL for `orders` (account 000000000000). */
const SQS_QUEUE_URL = `${README_ADDRESSES.SQS_ENDPOINT}/000000000000/orders`;
/** How the epilogue's SQS publisher and this file reach ElasticMQ, as the README's block does. */
const SQS_CLIENT_CONFIG = {
  endpoint: README_ADDRESSES.SQS_ENDPOINT,
  region: 'us-east-1',
  credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
};

/** How long an epilogue waits for the effect: a first Kafka group join included. */
const EFFECT_WAIT_MS = 25_000;
/** How long a program may run before it is killed and its quick start fails. */
const PROGRAM_TIMEOUT_MS = 45_000;
/** The line each epilogue prints last, after everything is closed. */
const DONE = 'README-QUICKSTART-DONE';

// ---------------------------------------------------------------------------------------------
// The README's blocks.

/** One block's own lines (the invisible `snippet context` above it is for the type check only). */
interface Block {
  /** `README.md:line` of its opening fence. */
  readonly name: string;
  readonly code: string;
}

function blockOf(snippet: Snippet): Block {
  const lines = snippet.source.split('\n');
  const code = lines.filter((_, i) => (snippet.lineMap[i] ?? 0) > snippet.line);
  return { name: `${snippet.file}:${snippet.line}`, code: code.join('\n') };
}

const snippets = extractSnippets(ROOT, 'README.md');

/** The one README block containing `marker`; anything else means the README changed shape. */
function readmeBlock(marker: string): Block {
  const found = snippets.filter((snippet) => snippet.source.includes(marker));
  if (found.length !== 1) {
    throw new Error(`README.md has ${found.length} ts blocks with \`${marker}\`, expected one`);
  }
  return blockOf(found[0]!);
}

// ---------------------------------------------------------------------------------------------
// The programs.

type Broker = 'kafka' | 'sqs' | 'rabbitmq';

/** What an epilogue needs to send one order through a broker with the transport's publisher. */
const BROKERS: Record<
  Broker,
  {
    readonly marker: string;
    readonly module: string;
    readonly factory: string;
    readonly options: object;
    readonly destination: string;
  }
> = {
  kafka: {
    marker: 'createKafkaConsumer(',
    module: '@justonce/kafka',
    factory: 'createKafkaPublisher',
    options: { brokers: [README_ADDRESSES.KAFKA_BROKERS] },
    destination: 'orders',
  },
  sqs: {
    marker: 'createSqsConsumer(',
    module: '@justonce/sqs',
    factory: 'createSqsPublisher',
    options: { clientConfig: SQS_CLIENT_CONFIG },
    destination: SQS_QUEUE_URL,
  },
  rabbitmq: {
    marker: 'createRabbitConsumer(',
    module: '@justonce/rabbitmq',
    factory: 'createRabbitPublisher',
    options: { url: README_ADDRESSES.AMQP_URL },
    destination: 'orders',
  },
};

/** A wait loop for an epilogue: polls `ready` (an expression) every 100 ms, for at most the bound. */
function waitLoop(ready: string, what: string, body: readonly string[] = []): string[] {
  return [
    `const testDeadline = Date.now() + ${EFFECT_WAIT_MS};`,
    `while (!(${ready})) {`,
    `  if (Date.now() > testDeadline) throw new Error(${JSON.stringify(`${what}: not within ${EFFECT_WAIT_MS} ms`)});`,
    ...body.map((line) => `  ${line}`),
    '  await new Promise((resolve) => setTimeout(resolve, 100));',
    '}',
  ];
}

/** The shared block, one broker block, and the epilogue that sends `orderId` and waits. */
function consumerProgram(broker: Broker, orderId: string): string {
  const { marker, module, factory, options, destination } = BROKERS[broker];
  const shared = readmeBlock('createInbox(');
  const block = readmeBlock(marker);
  return [
    `// ${shared.name}, verbatim`,
    shared.code,
    `// ${block.name}, verbatim`,
    block.code,
    '// The test epilogue: one order through the transport, then a clean shutdown.',
    `import { ${factory} as testPublisherOf } from '${module}';`,
    `const testOrder = { id: ${JSON.stringify(orderId)}, totalCents: 4200 };`,
    'const testMessage = {',
    `  messageId: ${JSON.stringify(randomUUID())},`,
    `  destination: ${JSON.stringify(destination)},`,
    '  key: testOrder.id,',
    '  headers: { type: OrderPlaced.type },',
    '  payload: new TextEncoder().encode(JSON.stringify(testOrder)),',
    '};',
    `const testPublisher = testPublisherOf(${JSON.stringify(options)});`,
    'let testSentAt = 0;',
    // The same message (same id) again every 2 s until it took effect: a Kafka group without
    // committed offsets starts at the end of the topic once it has joined, which start() does
    // not wait for, so on a first run an order sent at once can be skipped. A copy that does
    // arrive is a duplicate, which the inbox drops.
    ...waitLoop(
      "await store.knex('invoices').where({ order_id: testOrder.id }).first()",
      `the invoice of ${orderId}`,
      [
        'if (Date.now() - testSentAt >= 2000) {',
        '  const [testResult] = await testPublisher.publish([testMessage]);',
        "  if (!testResult?.ok) throw testResult?.error ?? new Error('no publish result');",
        '  testSentAt = Date.now();',
        '}',
      ],
    ),
    'await testPublisher.close();',
    'await consumer.stop();',
    'await store.close();',
    `console.log(${JSON.stringify(`${DONE} invoice ${orderId}`)});`,
    '',
  ].join('\n');
}

/** The shared block (the message type and the store), the publishing block, and the epilogue. */
function publishingProgram(): string {
  const shared = readmeBlock('createInbox(');
  const block = readmeBlock('createRelay(');
  return [
    `// ${shared.name}, verbatim: the message type and the store`,
    shared.code,
    `// ${block.name}, verbatim`,
    block.code,
    '// The test epilogue: wait until the relay has published the order event, then stop.',
    "import { rowsOf as testRowsOf } from '@justonce/core';",
    // The relay deletes an event once it is published (`onPublished: 'delete'`, the default),
    // while a dead event stays: the row being gone means the event reached Kafka.
    ...waitLoop(
      'testRowsOf(await store.knex.raw(' +
        "'select 1 from ' + store.names.table('outbox') + ' where partition_key = ?', " +
        '[order.id])).length === 0',
      'the order event published',
    ),
    'await relay.stop();',
    'await publisher.close();',
    'await store.close();',
    `console.log(${JSON.stringify(`${DONE} published `)} + order.id);`,
    '',
  ].join('\n');
}

// ---------------------------------------------------------------------------------------------
// Running them.

/** The packages the programs import, as the test process sees them (see `writeLoader`). */
const PACKAGES = {
  '@justonce/core': { source: 'packages/core/src/index.ts', names: Object.keys(core) },
  '@justonce/kafka': { source: 'packages/kafka/src/index.ts', names: Object.keys(kafka) },
  '@justonce/sqs': { source: 'packages/sqs/src/index.ts', names: Object.keys(sqs) },
  '@justonce/rabbitmq': { source: 'packages/rabbitmq/src/index.ts', names: Object.keys(rabbitmq) },
};

/** Runs one program from the repository's root, where its imports (zod) resolve. */
function runReadmeProgram(dir: string, name: string, program: string, tsconfig: string) {
  return runProgram({
    cwd: ROOT,
    dir,
    name,
    program,
    tsconfig,
    env: { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
    timeoutMs: PROGRAM_TIMEOUT_MS,
  });
}

// ---------------------------------------------------------------------------------------------
// The test.

/** Messages on `orders` from the offsets it had before the programs ran. */
async function readOrdersFrom(
  client: Kafka,
  offsets: readonly { partition: number; offset: string }[],
  into: { key: string; headers: Record<string, string>; value: string }[],
): Promise<KafkaReader> {
  const reader = client.consumer({
    groupId: `jo-readme-reader-${randomUUID()}`,
    sessionTimeout: 6000,
    heartbeatInterval: 500,
    maxWaitTimeInMs: 200,
  });
  await reader.connect();
  await reader.subscribe({ topics: ['orders'] });
  await reader.run({
    eachMessage: async ({ message }) => {
      const headers: Record<string, string> = {};
      for (const [key, value] of Object.entries(message.headers ?? {})) {
        if (value !== undefined) headers[key] = String(Array.isArray(value) ? value[0] : value);
      }
      into.push({
        key: message.key?.toString() ?? '',
        headers,
        value: message.value?.toString() ?? '',
      });
    },
  });
  for (const { partition, offset } of offsets) reader.seek({ topic: 'orders', partition, offset });
  return reader;
}

describe('the README quick starts, run as written against the local services', () => {
  const orderIds = {
    kafka: `readme-kafka-${randomUUID()}`,
    sqs: `readme-sqs-${randomUUID()}`,
    rabbitmq: `readme-rabbitmq-${randomUUID()}`,
  };
  const runs = new Map<string, Promise<ProgramRun>>();
  const published: { key: string; headers: Record<string, string>; value: string }[] = [];
  let dir: string | undefined;
  let pg: Client | undefined;
  let admin: Admin | undefined;
  let reader: KafkaReader | undefined;
  let sqsClient: SQSClient | undefined;

  beforeAll(async () => {
    // Elsewhere (Testcontainers, another host) the README's programs would miss them.
    const elsewhere = Object.entries(README_ADDRESSES).filter(
      ([variable, address]) => process.env[variable]?.replace(/\/$/, '') !== address,
    );
    if (elsewhere.length > 0) {
      throw new Error(
        'the README quick starts connect to the services at the addresses `pnpm services:up` ' +
          'prints, but the global setup found them elsewhere: ' +
          elsewhere.map(([v, address]) => `${v}=${process.env[v]} (README: ${address})`).join(', '),
      );
    }
    for (const address of [...Object.values(README_ADDRESSES), SQS_QUEUE_URL]) {
      if (!snippets.some((snippet) => snippet.source.includes(`'${address}'`))) {
        throw new Error(`no README block connects to ${address}: update README_ADDRESSES`);
      }
    }

    pg = new Client({ connectionString: databaseUrl() });
    await pg.connect();
    // The README's own statement, run once before the programs: PostgreSQL's `create table
    // if not exists` can fail on a unique violation when several sessions run it at once.
    const shared = readmeBlock('createInbox(');
    const createInvoices = /'(create table if not exists invoices [^']*)'/.exec(shared.code);
    if (!createInvoices) throw new Error(`${shared.name}: no \`create table … invoices\``);
    await pg.query(createInvoices[1]!);
    // The table the publishing quick start inserts its order into.
    await pg.query('create table if not exists orders (id text primary key, total_cents int)');

    const client = new Kafka({
      clientId: 'justonce-readme-test',
      brokers: [README_ADDRESSES.KAFKA_BROKERS],
      logLevel: logLevel.NOTHING,
    });
    admin = client.admin();
    await admin.connect();
    await admin.createTopics({
      waitForLeaders: true,
      topics: [{ topic: 'orders', numPartitions: 1, replicationFactor: 1 }],
    });
    const before = await admin.fetchTopicOffsets('orders');
    reader = await readOrdersFrom(client, before, published);

    sqsClient = new SQSClient(SQS_CLIENT_CONFIG);
    const { QueueUrl } = await sqsClient.send(new CreateQueueCommand({ QueueName: 'orders' }));
    if (QueueUrl !== SQS_QUEUE_URL) {
      throw new Error(`ElasticMQ calls the queue ${QueueUrl}, the README ${SQS_QUEUE_URL}`);
    }

    // Inside the repository (not under node_modules, where tsx ignores the tsconfig's paths),
    // so that the blocks' own imports (zod) resolve from its node_modules.
    mkdirSync(join(ROOT, '.test-output'), { recursive: true });
    dir = mkdtempSync(join(ROOT, '.test-output', 'readme-'));
    const tsconfig = writeLoader(ROOT, dir, PACKAGES);
    for (const broker of ['kafka', 'sqs', 'rabbitmq'] as const) {
      const program = consumerProgram(broker, orderIds[broker]);
      runs.set(broker, runReadmeProgram(dir, `consumer-${broker}`, program, tsconfig));
    }
    runs.set('publishing', runReadmeProgram(dir, 'publishing', publishingProgram(), tsconfig));
  });

  afterAll(async () => {
    await killPrograms();
    await reader?.disconnect();
    await admin?.disconnect();
    sqsClient?.destroy();
    if (pg) {
      await pg.query('delete from invoices where order_id = any($1)', [Object.values(orderIds)]);
      await pg.end();
    }
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it.each(['kafka', 'sqs', 'rabbitmq'] as const)(
    'a consumer on %s: the order becomes an invoice, and the program ends by itself',
    async (broker) => {
      const run = await runs.get(broker)!;
      expectSuccess(
        `consumer on ${broker}`,
        run,
        new RegExp(`^${DONE} invoice ${orderIds[broker]}$`, 'm'),
      );
      const { rows } = await pg!.query<{ total_cents: number }>(
        'select total_cents from invoices where order_id = $1',
        [orderIds[broker]],
      );
      expect(rows).toEqual([{ total_cents: 4200 }]);
    },
  );

  it('publishing from a service: the order commits and its event reaches Kafka', async () => {
    const run = await runs.get('publishing')!;
    const [, orderId = ''] = expectSuccess(
      'publishing',
      run,
      new RegExp(`^${DONE} published (\\S+)$`, 'm'),
    );
    const { rows } = await pg!.query<{ total_cents: number }>(
      'select total_cents from orders where id = $1',
      [orderId],
    );
    expect(rows).toEqual([{ total_cents: 4200 }]);
    const event = await waitFor(`the event of order ${orderId} on Kafka`, () =>
      published.find((message) => message.key === orderId),
    );
    expect(event.headers['message-id']).toMatch(/.+/);
    expect(JSON.parse(event.value)).toEqual({ id: orderId, totalCents: 4200 });
    await pg!.query('delete from orders where id = $1', [orderId]);
    // The Kafka consumer quick start may have made an invoice of it too.
    await pg!.query('delete from invoices where order_id = $1', [orderId]);
  });
});
