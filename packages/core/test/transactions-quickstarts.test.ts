import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from 'pg';
import * as core from '@justonce/core';
import * as drizzleAdapter from '@justonce/core/drizzle';
import * as kyselyAdapter from '@justonce/core/kysely';
import * as pgAdapter from '@justonce/core/pg';
import * as typeormAdapter from '@justonce/core/typeorm';
import { databaseUrl } from '../../../test-support/services';
import { extractSnippets, type Snippet } from './fixtures/doc-snippets';
import {
  expectSuccess,
  killPrograms,
  runProgram,
  writeLoader,
  type ProgramRun,
} from './fixtures/doc-programs';

/**
 * The quick starts of docs/transactions.md run, as written, against the local PostgreSQL
 * (docs-snippets.test.ts only type-checks them). Each program is one block verbatim between
 * a prologue and an epilogue of this file's own:
 *
 * - the prologue creates the `orders` table the block writes to and defines what the block's
 *   `snippet context` declares: a real envelope of an `order.placed` message with a fresh id,
 *   and a migrated store (in the program's schema, so the Kysely block's fixed operation key
 *   is new on every run); type imports and the `Database` interface stay as written;
 * - the epilogue checks, on its own connection, what the block committed: exactly the order
 *   rows it inserted, the inbox's record of the envelope in the transaction of the handler's
 *   row, each outbox event in the transaction of the order it was added with (same `xmin`),
 *   and for Kysely the operation's record and response. It deletes the events and records it
 *   checked (the Drizzle block's store is the shared `justonce` schema, where another test's
 *   relay would publish them), closes what the block left open and prints a DONE line.
 *
 * Every program gets a schema of its own, first on its `search_path` (a connection-string
 * option, so the block's pool and the store both find `orders` there); the test creates and
 * drops the schemas. The programs run as child processes, all at once, and must exit on their
 * own with code 0.
 */

const ROOT = join(__dirname, '..', '..', '..');
const PAGE = 'docs/transactions.md';
/** How long a program may run before it is killed and its quick start fails. */
const PROGRAM_TIMEOUT_MS = 45_000;
/** The store schema of a block that creates its own store (`createStore`'s default). */
const SHARED_STORE_SCHEMA = 'justonce';
/** The line each epilogue prints last, after everything is closed. */
const DONE = 'TRANSACTIONS-QUICKSTART-DONE';

/** An outbox event as the epilogue reads it back. */
interface Event {
  readonly destination: string;
  readonly key: string | null;
  readonly type: string | null;
  readonly payload: unknown;
}

/** The ids of one program's envelope: the message's and the order's in its body. */
interface Ids {
  readonly messageId: string;
  readonly orderId: string;
}

/** What one quick start must have committed, and what of its own the epilogue closes. */
interface QuickStart {
  /** What names its block: the adapter it makes. */
  readonly marker: string;
  /** The order rows, each with the outbox events committed in its transaction. */
  orders(ids: Ids): { id: string; cents: number; events: Event[] }[];
  /** The order row the handler inserted: the inbox's record commits with it. */
  handled(ids: Ids): string;
  /** An operation run in the business transaction, its response, and its order row. */
  readonly operation?: { name: string; key: string; response: unknown; order: string };
  /** More checks, on the block's own variables. */
  readonly checks?: readonly string[];
  /** Closes what the block opened and left open (the store is closed after these). */
  readonly close: readonly string[];
}

const orderPlaced = (id: string, cents: number): Event => ({
  destination: 'orders',
  key: id,
  type: 'order.placed',
  payload: { id, cents },
});
const plain = (destination: string, payload: unknown): Event => ({
  destination,
  key: null,
  type: null,
  payload,
});

const QUICK_STARTS: Record<string, QuickStart> = {
  drizzle: {
    marker: 'drizzleTransactions(db)',
    orders: ({ orderId }) => [
      { id: orderId, cents: 4200, events: [] },
      { id: 'o-2', cents: 1200, events: [orderPlaced('o-2', 1200)] },
    ],
    handled: ({ orderId }) => orderId,
    // The block's pool is an argument of drizzle(): it is the database's `$client`.
    close: ['await db.$client.end();'],
  },
  kysely: {
    marker: 'kyselyTransactions(db)',
    orders: ({ messageId }) => [
      { id: messageId, cents: 100, events: [plain('invoices', { orderId: messageId })] },
      { id: 'o-3', cents: 100, events: [] },
    ],
    handled: ({ messageId }) => messageId,
    operation: { name: 'create-order', key: 'key-1', response: { id: 'o-3' }, order: 'o-3' },
    checks: ["testEqual(created, { id: 'o-3' }, 'what runInTransaction returned');"],
    close: ['await db.destroy();'],
  },
  typeorm: {
    marker: 'typeormTransactions(dataSource)',
    orders: ({ messageId }) => [
      { id: messageId, cents: 100, events: [] },
      { id: 'o-4', cents: 100, events: [plain('orders', { id: 'o-4' })] },
    ],
    handled: ({ messageId }) => messageId,
    close: ['await dataSource.destroy();'],
  },
  pg: {
    marker: 'pgTransactions(pool)',
    orders: ({ messageId }) => [
      { id: messageId, cents: 100, events: [] },
      { id: 'o-5', cents: 100, events: [plain('orders', { id: 'o-5' })] },
    ],
    handled: ({ messageId }) => messageId,
    close: ['await pool.end();'],
  },
};

// ---------------------------------------------------------------------------------------------
// The page's blocks.

/** One block: its `snippet context` lines and its own lines, apart. */
interface Block {
  /** `docs/transactions.md:line` of its opening fence. */
  readonly name: string;
  readonly context: readonly string[];
  readonly code: string;
}

function blockOf(snippet: Snippet): Block {
  const lines = snippet.source.split('\n');
  const inBlock = (i: number): boolean => (snippet.lineMap[i] ?? 0) > snippet.line;
  return {
    name: `${snippet.file}:${snippet.line}`,
    context: lines.filter((_, i) => !inBlock(i)),
    code: lines.filter((_, i) => inBlock(i)).join('\n'),
  };
}

const snippets = extractSnippets(ROOT, PAGE);

/** The one block containing `marker`; anything else means the page changed shape. */
function pageBlock(marker: string): Block {
  const found = snippets.filter((snippet) => snippet.source.includes(marker));
  if (found.length !== 1) {
    throw new Error(`${PAGE} has ${found.length} ts blocks with \`${marker}\`, expected one`);
  }
  return blockOf(found[0]!);
}

// ---------------------------------------------------------------------------------------------
// The programs.

/** What the block's context declares, defined; its type imports and interfaces as written. */
function prologue(block: Block, ids: Ids, schema: string): string[] {
  const envelope = {
    id: ids.messageId,
    key: ids.orderId,
    headers: { type: 'order.placed' },
    body: JSON.stringify({ id: ids.orderId, cents: 4200 }),
  };
  const defined = block.context.map((line) => {
    const declared = /^\s*declare const (\w+): (\w+);\s*$/.exec(line);
    if (!declared) return line;
    if (declared[1] === 'envelope' && declared[2] === 'Envelope') {
      const facts = "delivery: { attempt: 1, source: 'orders', receivedAt: new Date() }";
      return `const envelope: Envelope = { ...${JSON.stringify(envelope)}, ${facts} };`;
    }
    if (declared[1] === 'store' && declared[2] === 'Store') {
      return [
        'const store = await testCreateStore({',
        `  connectionString: process.env.DATABASE_URL, schema: ${JSON.stringify(schema)},`,
        '});',
        'await store.migrate();',
      ].join('\n');
    }
    throw new Error(
      `${block.name}: the test defines no \`${line.trim()}\`: add it to the prologue`,
    );
  });
  return [
    '// The test prologue: the table the block writes to, and what its context declares.',
    "import testPg from 'pg';",
    "import { createStore as testCreateStore } from '@justonce/core';",
    'const testDb = new testPg.Client({ connectionString: process.env.DATABASE_URL });',
    'await testDb.connect();',
    // Unqualified, as the block writes: it lands in the program's schema.
    "await testDb.query('create table orders (id text primary key, cents integer)');",
    ...defined,
  ];
}

/** Checks what the block committed, deletes justonce's rows it checked, closes, prints DONE. */
function epilogue(name: string, quickStart: QuickStart, ids: Ids): string[] {
  const orders = quickStart.orders(ids).sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  // The inbox's record of the envelope, and the operation's: each with the order it commits with.
  const { operation } = quickStart;
  // The inbox's records live in `inbox_records`, operations' in `idempotency`.
  const inbox = { table: 'inbox_records', nameColumn: 'consumer', keyColumn: 'message_id' };
  const operations = { table: 'idempotency', nameColumn: 'operation', keyColumn: 'key' };
  const records = [
    {
      ...inbox,
      operation: 'billing',
      key: ids.messageId,
      order: quickStart.handled(ids),
      response: null,
    },
    ...(operation ? [{ ...operations, ...operation, operation: operation.name }] : []),
  ];
  return [
    '// The test epilogue: what the block committed, read on the prologue connection.',
    "import { deepStrictEqual as testEqual } from 'node:assert';",
    'const testOrders = (await testDb.query(',
    `  'select id, cents, xmin::text as tx from orders order by id collate "C"',`,
    ')).rows;',
    `const testExpected = ${JSON.stringify(orders)};`,
    'testEqual(',
    '  testOrders.map(({ id, cents }) => ({ id, cents })),',
    '  testExpected.map(({ id, cents }) => ({ id, cents })),',
    "  'the order rows',",
    ');',
    'const testTx = (id) => testOrders.find((row) => row.id === id).tx;',
    'const testEvents = (await testDb.query(',
    "  `select message_id, destination, partition_key as key, headers->>'type' as type, ` +",
    "    `convert_from(payload, 'UTF8') as payload, xmin::text as tx from ${store.names.table('outbox')} ` +",
    "    'where xmin::text = any($1) order by id',",
    '  [testOrders.map((row) => row.tx)],',
    ')).rows;',
    'for (const { id, events } of testExpected) {',
    '  const committed = testEvents.filter((event) => event.tx === testTx(id));',
    '  testEqual(',
    '    committed.map(({ destination, key, type, payload }) => ({ destination, key, type, payload: JSON.parse(payload) })),',
    '    events,',
    '    `the outbox events committed with order ${id}`,',
    '  );',
    '}',
    `for (const { table, nameColumn, keyColumn, operation, key, order, response } of ${JSON.stringify(records)}) {`,
    "  const responseColumn = table === 'idempotency' ? 'response' : 'null::json as response';",
    '  const rows = (await testDb.query(',
    '    `select status, ${responseColumn}, xmin::text as tx from ${store.names.table(table)} ` +',
    '      `where ${nameColumn} = $1 and ${keyColumn} = $2`,',
    '    [operation, key],',
    '  )).rows;',
    '  testEqual(',
    '    rows.map((row) => ({ status: row.status, tx: row.tx, ...(response === null ? {} : { response: row.response }) })),',
    "    [{ status: 'SUCCEEDED', tx: testTx(order), ...(response === null ? {} : { response }) }],",
    '    `the record of ${operation} ${key}, committed with order ${order}`,',
    '  );',
    '  await testDb.query(',
    '    `delete from ${store.names.table(table)} where ${nameColumn} = $1 and ${keyColumn} = $2`,',
    '    [operation, key],',
    '  );',
    '}',
    ...(quickStart.checks ?? []),
    'await testDb.query(',
    "  `delete from ${store.names.table('outbox')} where message_id = any($1)`,",
    '  [testEvents.map((event) => event.message_id)],',
    ');',
    '// Then everything open is closed, or the program would not end by itself.',
    ...quickStart.close,
    'await store.close();',
    'await testDb.end();',
    `console.log(${JSON.stringify(`${DONE} ${name}`)});`,
    '',
  ];
}

function program(name: string, ids: Ids, schema: string): string {
  const quickStart = QUICK_STARTS[name]!;
  const block = pageBlock(quickStart.marker);
  return [
    ...prologue(block, ids, schema),
    `// ${block.name}, verbatim`,
    block.code,
    ...epilogue(name, quickStart, ids),
  ].join('\n');
}

/** DATABASE_URL with the program's schema first on the search path of every connection. */
function urlWithSearchPath(schema: string): string {
  const url = new URL(databaseUrl());
  url.searchParams.delete('options');
  const options = `options=${encodeURIComponent(`-c search_path=${schema},public`)}`;
  return `${url.toString()}${url.search === '' ? '?' : '&'}${options}`;
}

/**
 * What a program that failed before its epilogue's deletes left in the shared `justonce`
 * schema (where the Drizzle block's own store is): the events committed with its orders and
 * the inbox's record of its envelope.
 */
async function deleteFromSharedStore(pg: Client, schema: string, messageId: string): Promise<void> {
  const { rows } = await pg.query<{ ready: boolean }>(
    'select to_regclass($1) is not null and to_regclass($2) is not null as ready',
    [`${schema}.orders`, `${SHARED_STORE_SCHEMA}.outbox`],
  );
  if (!rows[0]?.ready) return;
  await pg.query(
    `delete from ${SHARED_STORE_SCHEMA}.outbox where xmin::text in (select xmin::text from ${schema}.orders)`,
  );
  await pg.query(
    `delete from ${SHARED_STORE_SCHEMA}.inbox_records where consumer = 'billing' and message_id = $1`,
    [messageId],
  );
}

// ---------------------------------------------------------------------------------------------
// The test.

describe(`the quick starts of ${PAGE}, run as written on PostgreSQL`, () => {
  const names = Object.keys(QUICK_STARTS);
  const suffix = randomUUID().slice(0, 8);
  const schemas = Object.fromEntries(names.map((name) => [name, `txqs_${name}_${suffix}`]));
  const ids = Object.fromEntries(
    names.map((name) => [name, { messageId: randomUUID(), orderId: `order-${randomUUID()}` }]),
  );
  const runs = new Map<string, Promise<ProgramRun>>();
  let pg: Client | undefined;
  let dir: string | undefined;

  beforeAll(async () => {
    // Every quick start of the page runs: a new one needs an entry in QUICK_STARTS.
    const covered = names.map((name) => pageBlock(QUICK_STARTS[name]!.marker).name);
    const missed = snippets.map(blockOf).filter((block) => !covered.includes(block.name));
    if (missed.length > 0) {
      throw new Error(`no program runs ${missed.map((block) => block.name).join(', ')}`);
    }

    pg = new Client({ connectionString: databaseUrl() });
    await pg.connect();
    for (const schema of Object.values(schemas)) await pg.query(`create schema ${schema}`);

    // Under packages/core, where the blocks' libraries (drizzle-orm, kysely, typeorm) resolve
    // from its node_modules and zod from the root's; not under node_modules, where tsx would
    // ignore the tsconfig's paths.
    mkdirSync(join(ROOT, 'packages', 'core', '.test-output'), { recursive: true });
    dir = mkdtempSync(join(ROOT, 'packages', 'core', '.test-output', 'transactions-'));
    const tsconfig = writeLoader(ROOT, dir, {
      '@justonce/core': { source: 'packages/core/src/index.ts', names: Object.keys(core) },
      '@justonce/core/pg': {
        source: 'packages/core/src/adapters/pg.ts',
        names: Object.keys(pgAdapter),
      },
      '@justonce/core/kysely': {
        source: 'packages/core/src/adapters/kysely.ts',
        names: Object.keys(kyselyAdapter),
      },
      '@justonce/core/drizzle': {
        source: 'packages/core/src/adapters/drizzle.ts',
        names: Object.keys(drizzleAdapter),
      },
      '@justonce/core/typeorm': {
        source: 'packages/core/src/adapters/typeorm.ts',
        names: Object.keys(typeormAdapter),
      },
    });
    for (const name of names) {
      const run = runProgram({
        cwd: ROOT,
        dir,
        name,
        program: program(name, ids[name]!, schemas[name]!),
        tsconfig,
        env: { DATABASE_URL: urlWithSearchPath(schemas[name]!) },
        timeoutMs: PROGRAM_TIMEOUT_MS,
      });
      runs.set(name, run);
    }
  });

  afterAll(async () => {
    await killPrograms();
    if (pg) {
      for (const name of names) {
        await deleteFromSharedStore(pg, schemas[name]!, ids[name]!.messageId);
        await pg.query(`drop schema if exists ${schemas[name]} cascade`);
      }
      await pg.end();
    }
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it.each(names)(
    'the %s quick start commits its rows once, in one transaction, and ends by itself',
    async (name) => {
      const run = await runs.get(name)!;
      expectSuccess(name, run, new RegExp(`^${DONE} ${name}$`, 'm'));
      // Committed, as the program saw: read again from outside, in the program's schema.
      const { rows } = await pg!.query<{ id: string; cents: number }>(
        `select id, cents from ${schemas[name]}.orders order by id collate "C"`,
      );
      const expected = QUICK_STARTS[name]!.orders(ids[name]!).map(({ id, cents }) => ({
        id,
        cents,
      }));
      expect(rows).toEqual(expected.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)));
    },
  );
});
