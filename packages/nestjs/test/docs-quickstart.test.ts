import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { connect } from 'amqplib';
import { Client } from 'pg';
import * as core from '@justonce/core';
import * as http from '@justonce/http';
import * as nestjs from '@justonce/nestjs';
import * as rabbitmq from '@justonce/rabbitmq';
import { amqpUrl, databaseUrl } from './support';
import { extractSnippets, type Snippet } from '../../core/test/fixtures/doc-snippets';
import {
  expectSuccess,
  killPrograms,
  runProgram,
  writeLoader,
  type ProgramRun,
} from '../../core/test/fixtures/doc-programs';

/**
 * The NestJS quick start of docs/nestjs.md runs, as written, on PostgreSQL and RabbitMQ
 * (docs-snippets.test.ts only type-checks it). One program composes three of the page's
 * blocks verbatim: the module (`JustonceModule.forRoot` with the RabbitMQ transport, a relay
 * and the idempotency scope), the `@OnMessage` handler `Billing` (which defines `OrderPlaced`,
 * what the route block's context declares) and the `@Idempotent` route `OrdersController`.
 * The blocks put neither the handler nor the controller in a module: the epilogue's root
 * module imports `AppModule` and adds them.
 *
 * The module block's store has no `schema` (the shared `justonce` one), and its relay would
 * publish every pending event there, other tests' included: the program gets a database of
 * its own instead, where the test creates the blocks' `orders` and `invoices` tables. The
 * handler's queue is `orders`, hard-coded: the test deletes it before and after the run.
 *
 * The epilogue boots the application on Express, POSTs an order twice with one key (the
 * second is a replay), waits until the order's `order.placed` event, relayed to the queue,
 * made the handler insert its invoice, closes the application and prints a DONE line. The
 * blocks inject by explicit tokens only, so tsx (which emits no decorator metadata) runs it.
 */

const ROOT = join(__dirname, '..', '..', '..');
const PAGE = 'docs/nestjs.md';
/** The root tsconfig's include (plain JSON). */
const ROOT_INCLUDE = (
  JSON.parse(readFileSync(join(ROOT, 'tsconfig.json'), 'utf8')) as { include: string[] }
).include;
const PROGRAM_TIMEOUT_MS = 25_000;
const DONE = 'NESTJS-QUICKSTART-DONE';
/** The queue the handler block consumes (and the relay publishes `OrderPlaced` to). */
const QUEUE = 'orders';

/** The blocks, each named by a string only it contains. */
const MARKERS = {
  module: 'relays: [{ publisher: createRabbitPublisher(',
  handler: 'ctx: MessageContext): Promise<void>',
  route: '@IdempotencyTransaction() trx: KnexTransaction',
} as const;

interface Block {
  readonly name: string;
  readonly context: string;
  readonly code: string;
}

const snippets = extractSnippets(ROOT, PAGE);

function pageBlock(marker: string): Block {
  const found = snippets.filter((snippet) => snippet.source.includes(marker));
  if (found.length !== 1) {
    throw new Error(`${PAGE} has ${found.length} ts blocks with \`${marker}\`, expected one`);
  }
  const snippet: Snippet = found[0]!;
  const lines = snippet.source.split('\n');
  const inBlock = (i: number): boolean => (snippet.lineMap[i] ?? 0) > snippet.line;
  return {
    name: `${snippet.file}:${snippet.line}`,
    context: lines.filter((_, i) => !inBlock(i)).join('\n'),
    code: lines.filter((_, i) => inBlock(i)).join('\n'),
  };
}

/** `const OrderPlaced = defineMessage({ … });` in `text`, whitespace collapsed. */
function orderPlacedOf(text: string): string | undefined {
  return /const OrderPlaced = defineMessage\(\{[\s\S]*?\}\);/.exec(text)?.[0].replace(/\s+/g, ' ');
}

function program(): string {
  const module = pageBlock(MARKERS.module);
  const handler = pageBlock(MARKERS.handler);
  const route = pageBlock(MARKERS.route);
  // The module and handler blocks declare no context; the route's declares the message type
  // the handler block defines: the program has it once, from there.
  for (const block of [module, handler]) {
    if (block.context.trim() !== '') throw new Error(`${block.name}: unexpected context`);
  }
  const declared = orderPlacedOf(route.context);
  if (declared === undefined || declared !== orderPlacedOf(handler.code)) {
    throw new Error(`${route.name}'s context is not the OrderPlaced of ${handler.name}`);
  }
  return [
    "import 'reflect-metadata';",
    `// ${module.name}, verbatim`,
    module.code,
    `// ${handler.name}, verbatim`,
    handler.code,
    `// ${route.name}, verbatim`,
    route.code,
    ...epilogue(),
  ].join('\n');
}

/** Boots the blocks' application, requests twice, waits for the invoice, closes, prints DONE. */
function epilogue(): string[] {
  return [
    '// The test epilogue.',
    "import { strict as testAssert } from 'node:assert';",
    "import { Module as TestModule } from '@nestjs/common';",
    "import { NestFactory as TestNestFactory } from '@nestjs/core';",
    "import { JUSTONCE_STORE as TEST_STORE } from '@justonce/nestjs';",
    '',
    '@TestModule({ imports: [AppModule], controllers: [OrdersController], providers: [Billing] })',
    'class TestRootModule {}',
    '',
    "const testApp = await TestNestFactory.create(TestRootModule, { logger: ['error', 'warn'] });",
    "await testApp.listen(0, '127.0.0.1');",
    "const testUrl = (await testApp.getUrl()).replace('[::1]', '127.0.0.1');",
    'const testKey = crypto.randomUUID();',
    'const testPost = () =>',
    '  fetch(`${testUrl}/orders`, {',
    "    method: 'POST',",
    '    headers: {',
    "      'content-type': 'application/json',",
    "      'idempotency-key': testKey,",
    "      'x-client-id': 'client-1',",
    '    },',
    '    body: JSON.stringify({ cents: 4200 }),',
    '  });',
    'const testFirst = await testPost();',
    'const testBody = await testFirst.text();',
    'testAssert.equal(testFirst.status, 201, testBody);',
    "testAssert.equal(testFirst.headers.get('idempotent-replayed'), null);",
    'const testOrder = JSON.parse(testBody);',
    'testAssert.equal(testOrder.cents, 4200);',
    'const testReplay = await testPost();',
    'testAssert.equal(testReplay.status, 201);',
    "testAssert.equal(testReplay.headers.get('idempotent-replayed'), 'true');",
    'testAssert.equal(await testReplay.text(), testBody);',
    '',
    "// The relay publishes the order's event to the queue; the handler inserts its invoice.",
    'const testStore = testApp.get(TEST_STORE);',
    "const testOrders = await testStore.knex('orders').select('id', 'cents');",
    'testAssert.deepEqual(testOrders, [{ id: testOrder.id, cents: 4200 }]);',
    'let testInvoices = [];',
    'for (const deadline = Date.now() + 15_000; Date.now() < deadline; ) {',
    "  testInvoices = await testStore.knex('invoices').select('order_id', 'cents');",
    '  if (testInvoices.length > 0) break;',
    '  await new Promise((resolve) => setTimeout(resolve, 50));',
    '}',
    'testAssert.deepEqual(testInvoices, [{ order_id: testOrder.id, cents: 4200 }]);',
    'await testApp.close();',
    `console.log(\`${DONE} \${testOrder.id}\`);`,
    '',
  ];
}

/** `databaseUrl()` with another database. */
function urlOf(database: string): string {
  const url = new URL(databaseUrl());
  url.pathname = `/${database}`;
  return url.toString();
}

async function deleteQueue(): Promise<void> {
  const connection = await connect(amqpUrl());
  try {
    const channel = await connection.createChannel();
    await channel.deleteQueue(QUEUE);
    await channel.close();
  } finally {
    await connection.close();
  }
}

describe(`the NestJS quick start of ${PAGE}, run as written`, () => {
  const database = `nestqs_${randomBytes(5).toString('hex')}`;
  let pg: Client | undefined;
  let dir: string | undefined;
  let run: Promise<ProgramRun> | undefined;

  beforeAll(async () => {
    const source = program();
    pg = new Client({ connectionString: databaseUrl() });
    await pg.connect();
    await pg.query(`create database ${database}`);
    const db = new Client({ connectionString: urlOf(database) });
    await db.connect();
    try {
      await db.query('create table orders (id text primary key, cents integer not null)');
      await db.query('create table invoices (order_id text primary key, cents integer not null)');
    } finally {
      await db.end();
    }
    await deleteQueue();

    // Under packages/nestjs, where @nestjs/* and reflect-metadata resolve; not under
    // node_modules, where tsx would ignore the tsconfig's paths.
    mkdirSync(join(ROOT, 'packages', 'nestjs', '.test-output'), { recursive: true });
    dir = mkdtempSync(join(ROOT, 'packages', 'nestjs', '.test-output', 'quickstart-'));
    const loader = writeLoader(ROOT, dir, {
      '@justonce/core': { source: 'packages/core/src/index.ts', names: Object.keys(core) },
      '@justonce/http': { source: 'packages/http/src/index.ts', names: Object.keys(http) },
      '@justonce/nestjs': { source: 'packages/nestjs/src/index.ts', names: Object.keys(nestjs) },
      '@justonce/rabbitmq': {
        source: 'packages/rabbitmq/src/index.ts',
        names: Object.keys(rabbitmq),
      },
    });
    // tsx applies a tsconfig's options (experimentalDecorators) only to the files it includes:
    // the root's include, which has the workspace sources, and this directory.
    const tsconfig = join(dir, 'tsconfig.program.json');
    writeFileSync(
      tsconfig,
      JSON.stringify({
        extends: loader,
        include: ['./**/*', ...ROOT_INCLUDE.map((pattern) => join(ROOT, pattern))],
      }),
    );
    run = runProgram({
      cwd: ROOT,
      dir,
      name: 'nestjs',
      program: source,
      tsconfig,
      env: { DATABASE_URL: urlOf(database) },
      timeoutMs: PROGRAM_TIMEOUT_MS,
    });
  });

  afterAll(async () => {
    await killPrograms();
    await deleteQueue();
    if (pg) {
      await pg.query(`drop database if exists ${database} with (force)`);
      await pg.end();
    }
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('boots, answers a request and its replay, handles the relayed message, and ends', async () => {
    const result = await run!;
    const [, orderId] = expectSuccess('nestjs', result, new RegExp(`^${DONE} (\\S+)$`, 'm'));
    // Committed, as the program saw: read again from outside.
    const db = new Client({ connectionString: urlOf(database) });
    await db.connect();
    try {
      const orders = await db.query('select id, cents from orders');
      expect(orders.rows).toEqual([{ id: orderId, cents: 4200 }]);
      const invoices = await db.query('select order_id, cents from invoices');
      expect(invoices.rows).toEqual([{ order_id: orderId, cents: 4200 }]);
    } finally {
      await db.end();
    }
  });
});
