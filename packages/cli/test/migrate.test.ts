/**
 * `justonce migrate` (and `status` before it), the global options, and command lines the
 * program itself refuses.
 */
import { createKnexMigrationSource, rowsOf, type Store } from '@justonce/core';
import { cli, dropStore, openStore, type Run } from './cli-process';

let store: Store;
let SCHEMA: string;
const inSchema = (...args: string[]): Promise<Run> => cli(['--schema', SCHEMA, ...args]);
/** How many migrations the package has (they grow with it). */
let ALL: number;

beforeAll(async () => {
  store = await openStore('cli_migrate', false);
  SCHEMA = store.schema;
  ALL = (await createKnexMigrationSource({ schema: SCHEMA }).getMigrations([])).length;
});

afterAll(() => dropStore(store));

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
    expect(run.stdout).toContain(`${ALL} pending migration(s)`);
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
    expect(first.stdout).toMatch(
      new RegExp(`applied ${ALL} migration\\(s\\).*now at version ${ALL}`),
    );
    const again = await inSchema('migrate', '--json');
    expect(again.code).toBe(0);
    expect(JSON.parse(again.stdout)).toEqual({ schema: SCHEMA, applied: [], version: ALL });
    const dry = await inSchema('migrate', '--dry-run', '--json');
    expect(JSON.parse(dry.stdout)).toEqual({ schema: SCHEMA, pending: [] });
  });
});

describe('bad command lines: clear message, exit 2, nothing created', () => {
  it.each([
    [['--schema', 'Bad-Name', 'status'], /--schema must match/],
    [
      ['--database-url', 'mongodb://x/y', 'migrate'],
      /--database-url must be a postgres:\/\/, postgresql:\/\/, mysql:\/\/ or mariadb:\/\/ URL/,
    ],
    [
      ['--database-url', 'mysql://x/y', '--knex-migrations-table', 'k', 'migrate'],
      /--knex-migrations-table applies to PostgreSQL only/,
    ],
    [['frobnicate'], /unknown command/],
    [['status', '--bogus'], /unknown option/],
  ])('%j', async (args, message) => {
    const run = await cli(['--schema', 'cli_never', ...args]);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(message);
    const result = await store.knex.raw(
      `select count(*)::int as n from pg_namespace where nspname in ('cli_never', 'Bad-Name')`,
    );
    expect(rowsOf<{ n: number }>(result)[0]!.n).toBe(0);
  });

  it('no database URL', async () => {
    const run = await cli(['--schema', 'cli_never', 'migrate'], { DATABASE_URL: '' });
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/pass --database-url or --pglite, or set DATABASE_URL/);
    const result = await store.knex.raw(
      `select count(*)::int as n from pg_namespace where nspname = 'cli_never'`,
    );
    expect(rowsOf<{ n: number }>(result)[0]!.n).toBe(0);
  });

  it('--help lists every command, exit 0', async () => {
    const run = await cli(['--help']);
    expect(run.code).toBe(0);
    for (const command of [
      'migrate',
      'status',
      'dead-letters',
      'outbox',
      'operations',
      'cleanup',
      'dashboard',
    ]) {
      expect(run.stdout).toContain(command);
    }
  });
});
