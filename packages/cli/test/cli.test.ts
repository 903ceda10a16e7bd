/**
 * The `justonce` CLI run as a child process (tsx on src/bin.ts, workspace sources) against
 * real PostgreSQL, in a fresh schema for this file, with data written by the real outbox,
 * inbox and operations.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import {
  createInbox,
  createOperations,
  createOutbox,
  createStore,
  rowsOf,
  type Store,
} from '@justonce/core';

const ROOT = join(__dirname, '..', '..', '..');
const BIN = join(__dirname, '..', 'src', 'bin.ts');
const TSX_CLI = require.resolve('tsx/cli');
const URL = process.env['DATABASE_URL'] ?? 'postgres://postgres@127.0.0.1:5432/test';
const SCHEMA = `cli_${process.pid}_${Date.now().toString(36)}`;

interface Run {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs `justonce args…` with `env` over this process's environment (DATABASE_URL set). */
function cli(args: readonly string[], env: Record<string, string | undefined> = {}): Promise<Run> {
  const child = spawn(
    process.execPath,
    [TSX_CLI, '--tsconfig', join(ROOT, 'tsconfig.json'), BIN, ...args],
    {
      cwd: ROOT,
      env: { ...process.env, DATABASE_URL: URL, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, stdout, stderr })));
}

const inSchema = (...args: string[]): Promise<Run> => cli(['--schema', SCHEMA, ...args]);

let store: Store;

beforeAll(async () => {
  store = await createStore({ connectionString: URL, schema: SCHEMA });
});

afterAll(async () => {
  await store.knex.raw(`drop schema if exists ${store.names.schema} cascade`);
  await store.close();
});

async function tableCount(): Promise<number> {
  const result = await store.knex.raw(
    `select count(*)::int as n from information_schema.tables where table_schema = ?`,
    [SCHEMA],
  );
  return rowsOf<{ n: number }>(result)[0]!.n;
}

describe('before migrating', () => {
  it('migrate --dry-run lists every migration and creates nothing', async () => {
    const run = await inSchema('migrate', '--dry-run');
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/9 pending migration\(s\)/);
    expect(run.stdout).toMatch(/001 init/);
    expect(await tableCount()).toBe(0);
  });

  it('status says the schema is not migrated, exit 1', async () => {
    const run = await inSchema('status');
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/run: justonce migrate/);
  });

  it('migrate applies them, then has nothing to do', async () => {
    const first = await inSchema('migrate');
    expect(first.code).toBe(0);
    expect(first.stdout).toMatch(/applied 9 migration\(s\).*now at version 9/);
    const again = await inSchema('migrate', '--json');
    expect(again.code).toBe(0);
    expect(JSON.parse(again.stdout)).toEqual({ schema: SCHEMA, applied: [], version: 9 });
    const dry = await inSchema('migrate', '--dry-run', '--json');
    expect(JSON.parse(dry.stdout)).toEqual({ schema: SCHEMA, pending: [] });
  });
});

describe('with data from the real outbox, inbox and operations', () => {
  beforeAll(async () => {
    const outbox = createOutbox({ store });
    await store.knex.transaction(async (trx) => {
      await outbox.add(trx, [
        { destination: 'orders', payload: { n: 1 } },
        { destination: 'orders', payload: { n: 2 } },
        { destination: 'emails', payload: { n: 3 } },
      ]);
    });
    const inbox = createInbox({ store, consumer: 'billing', maxAttempts: 1 });
    // No id: dead-lettered as MISSING_MESSAGE_ID without reaching the handler.
    await inbox.process(
      { scope: 'default', headers: { type: 'x' }, body: '{"a":1}', delivery: {} } as never,
      async () => 'ok',
    );
    // A handler that fails on its only attempt.
    await inbox.process(
      {
        id: 'm-1',
        scope: 'default',
        headers: { 'content-type': 'application/json' },
        body: '{"amount":42}',
        delivery: {},
      },
      async () => {
        throw new Error('card declined');
      },
    );
    await inbox.process(
      {
        id: 'm-2',
        scope: 'default',
        headers: {},
        body: new Uint8Array([0xff, 0x00, 0x10]),
        delivery: {},
      },
      async () => {
        throw new Error('cannot read');
      },
    );
    const operations = createOperations({ store, operation: 'charge-card' });
    await operations.reserve('k-live', { a: 1 }, {});
    await createOperations({ store, operation: 'charge-card', leaseMs: 1000 }).reserve('k-stuck', {
      a: 2,
    });
    await new Promise((r) => setTimeout(r, 1500));
  });

  it('status --json gives the figures', async () => {
    const run = await inSchema('status', '--json');
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const status = JSON.parse(run.stdout);
    expect(status.outbox).toEqual([
      { destination: 'emails', pending: 1, oldestPendingSeconds: expect.any(Number), dead: 0 },
      { destination: 'orders', pending: 2, oldestPendingSeconds: expect.any(Number), dead: 0 },
    ]);
    const byReason = Object.fromEntries(
      status.deadLetters.map((d: { reason: string; count: number }) => [d.reason, d.count]),
    );
    expect(status.deadLetters.every((d: { consumer: string }) => d.consumer === 'billing')).toBe(
      true,
    );
    expect(byReason['MISSING_MESSAGE_ID']).toBe(1);
    expect(Object.values(byReason).reduce((a, b) => (a as number) + (b as number), 0)).toBe(3);
    expect(status.operations).toEqual([{ operation: 'charge-card', inProgress: 1, pastLease: 1 }]);
  });

  it('status prints one screen', async () => {
    const run = await inSchema('status');
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/orders\s*│\s*2/);
    expect(run.stdout).toMatch(/charge-card\s*│\s*1\s*│\s*1/);
  });

  it('dead-letters list filters by reason and consumer, exit 1 when any', async () => {
    const all = await inSchema('dead-letters', 'list', '--json');
    expect(all.code).toBe(1);
    const letters = JSON.parse(all.stdout) as { id: string; reason: string }[];
    expect(letters).toHaveLength(3);
    const missing = await inSchema(
      'dead-letters',
      'list',
      '--reason',
      'MISSING_MESSAGE_ID',
      '--json',
    );
    expect(JSON.parse(missing.stdout)).toHaveLength(1);
    const other = await inSchema('dead-letters', 'list', '--consumer', 'nobody');
    expect(other.code).toBe(0);
    expect(other.stdout).toMatch(/no dead letters match/);
    const byId = await inSchema(
      'dead-letters',
      'list',
      '--id',
      `${letters[0]!.id},${letters[2]!.id}`,
      '--json',
    );
    expect((JSON.parse(byId.stdout) as { id: string }[]).map((l) => l.id)).toEqual([
      letters[0]!.id,
      letters[2]!.id,
    ]);
    const future = await inSchema('dead-letters', 'list', '--since', '2999-01-01T00:00:00Z');
    expect(future.code).toBe(0);
    const past = await inSchema('dead-letters', 'list', '--until', '2000-01-01', '--json');
    expect(JSON.parse(past.stdout)).toEqual([]);
  });

  it('dead-letters show prints headers, pretty JSON or hex body, and the error', async () => {
    const letters = JSON.parse((await inSchema('dead-letters', 'list', '--json')).stdout) as {
      id: string;
      messageId: string | null;
    }[];
    const json = letters.find((l) => l.messageId === 'm-1')!;
    const shown = await inSchema('dead-letters', 'show', json.id);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toMatch(/content-type: application\/json/);
    expect(shown.stdout).toContain('{\n  "amount": 42\n}');
    expect(shown.stdout).toMatch(/message: .*card declined/);
    const bytes = letters.find((l) => l.messageId === 'm-2')!;
    const hex = await inSchema('dead-letters', 'show', bytes.id);
    expect(hex.stdout).toMatch(/body \(3 bytes\)\nff0010/);
    const missing = await inSchema('dead-letters', 'show', '999999');
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/no dead letter 999999/);
  });
});

describe('bad arguments: clear message, exit 2, nothing changed', () => {
  it.each([
    [['--schema', 'Bad-Name', 'status'], /--schema must match/],
    [['--schema', SCHEMA, 'dead-letters', 'list', '--reason', 'NOPE'], /--reason must be one of/],
    [
      ['--schema', SCHEMA, 'dead-letters', 'list', '--since', 'yesterday'],
      /--since must be an ISO 8601/,
    ],
    [['--schema', SCHEMA, 'dead-letters', 'list', '--id', '1,x'], /--id takes dead letter ids/],
    [['--schema', SCHEMA, 'dead-letters', 'show', '-3'], /unknown option|positive integer/],
    [['--schema', SCHEMA, 'dead-letters', 'show'], /missing required argument/],
    [['--schema', SCHEMA, 'frobnicate'], /unknown command/],
    [['--schema', SCHEMA, 'status', '--bogus'], /unknown option/],
  ])('%j', async (args, message) => {
    const before = await store.knex.raw(
      `select count(*)::int as n from ${store.names.table('dead_letters')}`,
    );
    const run = await cli(args);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(message);
    const after = await store.knex.raw(
      `select count(*)::int as n from ${store.names.table('dead_letters')}`,
    );
    expect(rowsOf(after)).toEqual(rowsOf(before));
  });

  it('no database URL', async () => {
    const run = await cli(['--schema', 'cli_never', 'migrate'], { DATABASE_URL: '' });
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/pass --database-url or set DATABASE_URL/);
    const result = await store.knex.raw(
      `select count(*)::int as n from pg_namespace where nspname = 'cli_never'`,
    );
    expect(rowsOf<{ n: number }>(result)[0]!.n).toBe(0);
  });
});
