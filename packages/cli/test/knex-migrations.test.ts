/**
 * `justonce status` and `migrate` on a schema whose migrations ran through knex's migrator
 * (createKnexMigrationSource), with `--knex-migrations-table`: on PostgreSQL and on a PGlite
 * data directory.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createKnexMigrationSource, createStore, rowsOf, type Store } from '@justonce/core';
import { cli, dropStore, openStore } from './cli-process';

/** justonce's migrations as knex's source, leaving out the last `withheld` of them. */
function sourceOf(schema: string, withheld = 0): ReturnType<typeof createKnexMigrationSource> {
  const source = createKnexMigrationSource({ schema });
  return {
    ...source,
    getMigrations: async (loaders) =>
      (await source.getMigrations(loaders)).slice(0, withheld === 0 ? undefined : -withheld),
  };
}

/** Whether justonce's own migrations table exists in the store's schema. */
async function ownRecordExists(store: Store): Promise<boolean> {
  const result = await store.knex.raw(`select to_regclass(?) is not null as present`, [
    store.names.table('migrations'),
  ]);
  return rowsOf<{ present: boolean }>(result)[0]!.present;
}

describe('on PostgreSQL', () => {
  let store: Store;
  let tableName: string;
  beforeAll(async () => {
    store = await openStore('cli_knexmig', false);
    tableName = `knex_${store.schema}`;
  });
  afterAll(async () => {
    await store.knex.schema.dropTableIfExists(`${tableName}_lock`);
    await store.knex.schema.dropTableIfExists(tableName);
    await dropStore(store);
  });
  const inSchema = (...args: string[]) => cli(['--schema', store.schema, ...args]);
  const withTable = (...args: string[]) => inSchema('--knex-migrations-table', tableName, ...args);

  it('migrate refuses while knex has migrations pending, exit 2, nothing changed', async () => {
    await store.knex.migrate.latest({ migrationSource: sourceOf(store.schema, 1), tableName });
    const dry = await withTable('migrate', '--dry-run');
    expect(dry.code).toBe(0);
    expect(dry.stdout).toMatch(/1 pending migration\(s\)/);
    expect(dry.stdout).toMatch(/apply them through knex's migrator/);
    const run = await withTable('migrate');
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/is migrated through knex's migrator .*nothing was changed/);
    expect(await ownRecordExists(store)).toBe(false);
  });

  it('with the flag, status reads the schema and migrate has nothing to do', async () => {
    await store.knex.migrate.latest({ migrationSource: sourceOf(store.schema), tableName });
    const status = await withTable('status', '--json');
    expect(status.stderr).toBe('');
    expect(status.code).toBe(0);
    expect(JSON.parse(status.stdout).schema).toBe(store.schema);
    const dry = await withTable('migrate', '--dry-run', '--json');
    expect(JSON.parse(dry.stdout)).toEqual({ schema: store.schema, pending: [] });
    const migrate = await withTable('migrate');
    expect(migrate.code).toBe(0);
    expect(migrate.stdout).toMatch(/is up to date/);
    expect(await ownRecordExists(store)).toBe(false);
  });

  it('without it, status says the schema is not migrated and names the flag, exit 1', async () => {
    const run = await inSchema('status');
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/run: justonce migrate .*pass --knex-migrations-table <name>/);
  });

  it.each([['Bad-Name'], ['a.b.c'], ['x.']])(
    'refuses --knex-migrations-table %j before connecting, exit 2',
    async (value) => {
      const run = await cli(['--knex-migrations-table', value, 'status'], {
        DATABASE_URL: 'postgres://127.0.0.1:1/none',
      });
      expect(run.code).toBe(2);
      expect(run.stderr).toMatch(/--knex-migrations-table must be knex's tableName/);
    },
  );
});

describe('on a PGlite data directory', () => {
  const dirs: string[] = [];
  afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

  it('status and migrate with the flag see the migrations knex ran', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'justonce-cli-knex-'));
    dirs.push(dir);
    // The application migrates through knex, then closes its database (single-process).
    const app = await createStore({ pglite: { dataDir: dir } });
    await app.knex.migrate.latest({
      migrationSource: sourceOf('justonce'),
      tableName: 'app_migrations',
    });
    await app.close();

    const onDir = ['--pglite', dir, '--knex-migrations-table', 'app_migrations'];
    const status = await cli([...onDir, 'status', '--json']);
    expect(status.stderr).toBe('');
    expect(status.code).toBe(0);
    const migrate = await cli([...onDir, 'migrate']);
    expect(migrate.stderr).toBe('');
    expect(migrate.stdout).toMatch(/schema justonce is up to date/);
  });
});
