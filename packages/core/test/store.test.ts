import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  createInbox,
  createKnexMigrationSource,
  createStore,
  migrationStatus,
  rowsOf,
} from '../src';
import { STORE_KINDS, databaseUrl, openTestStore, uniqueSchema } from './db';

describe.each(STORE_KINDS)('store on %s', (kind) => {
  it('migrates and records every version once, even when two migrators race', async () => {
    const store = await openTestStore(kind);
    try {
      const again = await Promise.all([store.migrate(), store.migrate()]);
      expect(again.map((r) => r.applied)).toEqual([[], []]);
      const rows = rowsOf<{ version: number }>(
        await store.knex.raw(
          `select version from ${store.names.table('migrations')} order by version`,
        ),
      );
      expect(rows.length).toBeGreaterThanOrEqual(1);
      expect(new Set(rows.map((r) => r.version)).size).toBe(rows.length);
    } finally {
      await store.dispose();
    }
  });
});

describe.each(STORE_KINDS)('migration status on %s', (kind) => {
  it('lists every migration as pending on a schema that does not exist, creates nothing, and none once migrated', async () => {
    const schema = uniqueSchema('status');
    const store = await createStore(
      kind === 'postgres' ? { connectionString: databaseUrl(), schema } : { schema, pglite: {} },
    );
    try {
      const before = await migrationStatus(store);
      expect(before.version).toBe(0);
      expect(before.applied).toEqual([]);
      expect(before.pending[0]).toEqual({ version: 1, name: expect.any(String) });
      const present = rowsOf<{ n: number }>(
        await store.knex.raw('select count(*)::int as n from pg_namespace where nspname = ?', [
          schema,
        ]),
      );
      expect(present[0]!.n).toBe(0);

      const migrated = await store.migrate();
      const after = await migrationStatus(store);
      expect(after.pending).toEqual([]);
      expect(after.version).toBe(migrated.version);
      expect(after.applied).toEqual(before.pending.map((m) => m.version));
    } finally {
      if (kind === 'postgres') await store.knex.raw(`drop schema if exists "${schema}" cascade`);
      await store.close();
    }
  });
});

describe('store on postgres, concurrent first migration', () => {
  it('two stores migrating a fresh schema at once both succeed', async () => {
    const schema = uniqueSchema('race');
    const a = await createStore({ connectionString: databaseUrl(), schema });
    const b = await createStore({ connectionString: databaseUrl(), schema });
    try {
      const [ra, rb] = await Promise.all([a.migrate(), b.migrate()]);
      expect(ra.version).toBe(rb.version);
      expect([...ra.applied, ...rb.applied].sort()).toEqual(
        [...new Set([...ra.applied, ...rb.applied])].sort(),
      );
    } finally {
      await a.knex.raw(`drop schema if exists "${schema}" cascade`);
      await a.close();
      await b.close();
    }
  });
});

describe('store configuration', () => {
  it.each([
    ['schema', { schema: 'Robert"; drop table x;--' }],
    ['schema', { schema: '1abc' }],
    ['tablePrefix', { tablePrefix: 'bad-prefix' }],
    ['schema', { schema: 'x'.repeat(64) }],
  ])('refuses an invalid %s', async (_what, options) => {
    await expect(createStore(options)).rejects.toMatchObject({ code: 'INVALID_CONFIG' });
  });

  it('refuses an option it does not know, rather than opening an in-memory database', async () => {
    await expect(
      createStore({ connection: databaseUrl() } as unknown as Parameters<typeof createStore>[0]),
    ).rejects.toMatchObject({
      code: 'INVALID_CONFIG',
      message: expect.stringContaining('unknown option `connection`'),
    });
  });

  it('closes an embedded database that was never queried', async () => {
    const store = await createStore();
    await store.close();
    expect((store.knex.client as { pglite: { closed: boolean } }).pglite.closed).toBe(true);
  });

  it('refuses a logger without its methods, and a PGlite data directory it cannot open, with ConfigurationError', async () => {
    await expect(createStore({ logger: {} as never })).rejects.toMatchObject({
      code: 'INVALID_CONFIG',
    });
    const file = join(mkdtempSync(join(tmpdir(), 'justonce-store-')), 'a-file');
    writeFileSync(file, 'not a database');
    await expect(createStore({ pglite: { dataDir: file } })).rejects.toMatchObject({
      code: 'INVALID_CONFIG',
      message: expect.stringContaining('PGlite could not start'),
    });
  });

  it('refuses two connection options at once', async () => {
    await expect(
      createStore({ connectionString: databaseUrl(), pglite: {} }),
    ).rejects.toMatchObject({ code: 'INVALID_CONFIG' });
  });
});

describe.each(STORE_KINDS)('knex migration source on %s', (kind) => {
  it("applies justonce's tables through the application's own knex migrations", async () => {
    const schema = uniqueSchema('knexmig');
    const store = await createStore(
      kind === 'postgres' ? { connectionString: databaseUrl(), schema } : { pglite: {}, schema },
    );
    const migrationSource = createKnexMigrationSource({ schema });
    const tableName = `knex_migrations_${schema}`;
    try {
      const [, applied] = (await store.knex.migrate.latest({ migrationSource, tableName })) as [
        number,
        string[],
      ];
      expect(applied.length).toBeGreaterThanOrEqual(4);
      expect(applied.every((name) => name.startsWith(`justonce_${schema}_`))).toBe(true);
      const again = (await store.knex.migrate.latest({ migrationSource, tableName })) as [
        number,
        string[],
      ];
      expect(again[1]).toEqual([]);

      // The tables work: an inbox on this schema processes a message once.
      const inbox = createInbox({ store, consumer: 'knex-migrated' });
      const envelope = { id: 'm-1', headers: {}, body: 'x', delivery: {} };
      const first = await inbox.process(envelope, async () => 'done');
      const second = await inbox.process(envelope, async () => 'again');
      expect([first.status, second.status]).toEqual(['processed', 'duplicate']);
    } finally {
      if (kind === 'postgres') {
        await store.knex.raw(`drop schema if exists "${schema}" cascade`);
        await store.knex.schema.dropTableIfExists(tableName);
        await store.knex.schema.dropTableIfExists(`${tableName}_lock`);
      }
      await store.close();
    }
  });
});
