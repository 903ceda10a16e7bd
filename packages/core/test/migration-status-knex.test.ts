/**
 * Migrations applied through knex's migrator (createKnexMigrationSource): migrationStatus and
 * store.migrate() read knex's table, named by `knexMigrationsTable` or found under knex's
 * default name, and leave a schema knex records to knex.
 */
import knexModule, { type Knex } from 'knex';
import {
  createKnexMigrationSource,
  createStore,
  migrationStatus,
  rowsOf,
  type Store,
  type StoreOptions,
} from '../src';
import { STORE_KINDS, databaseUrl, uniqueSchema, type StoreKind } from './db';

const createKnex = knexModule;

/** A store of `kind` on `schema`, not migrated, or on the `knex` given. */
async function openStore(
  kind: StoreKind,
  schema: string,
  extra: Omit<StoreOptions, 'connectionString' | 'pglite' | 'schema'> = {},
): Promise<Store> {
  if (extra.knex !== undefined) return createStore({ ...extra, schema });
  return createStore(
    kind === 'postgres'
      ? { ...extra, schema, connectionString: databaseUrl() }
      : { ...extra, schema, pglite: {} },
  );
}

/** justonce's migrations as knex's source, leaving out the last `withheld` of them. */
function sourceOf(schema: string, withheld = 0): Knex.MigrationSource<unknown> {
  const source = createKnexMigrationSource({ schema });
  return {
    ...source,
    getMigrations: async (loaders) =>
      (await source.getMigrations(loaders)).slice(0, withheld === 0 ? undefined : -withheld),
  } as Knex.MigrationSource<unknown>;
}

/** Every version of this release, in order. */
async function allVersions(schema: string): Promise<number[]> {
  const migrations = await createKnexMigrationSource({ schema }).getMigrations([]);
  return migrations.map((m) => m.version);
}

/** Whether justonce's own migrations table exists in the store's schema. */
async function ownRecordExists(store: Store): Promise<boolean> {
  const result = await store.knex.raw(`select to_regclass(?) is not null as present`, [
    store.names.table('migrations'),
  ]);
  return rowsOf<{ present: boolean }>(result)[0]!.present;
}

/** Drops what a test created on PostgreSQL (PGlite's in-memory database goes with the store). */
async function dropAll(knex: Knex, schemas: readonly string[], tables: readonly string[]) {
  for (const table of tables) {
    await knex.schema.dropTableIfExists(`${table}_lock`);
    await knex.schema.dropTableIfExists(table);
  }
  for (const schema of schemas) await knex.raw(`drop schema if exists "${schema}" cascade`);
}

describe.each(STORE_KINDS)('migrations run through knex, on %s', (kind) => {
  it('a named knex table counts as applied; without the name a custom table is not seen', async () => {
    const schema = uniqueSchema('kx');
    const tableName = `knex_${schema}`;
    const store = await openStore(kind, schema);
    const named = await openStore(kind, schema, {
      knexMigrationsTable: tableName,
      ...(kind === 'pglite' ? { knex: store.knex } : {}),
    });
    try {
      await store.knex.migrate.latest({ migrationSource: sourceOf(schema), tableName });
      const all = await allVersions(schema);

      const seen = await migrationStatus(store, { knexMigrationsTable: tableName });
      expect(seen).toEqual({
        version: Math.max(...all),
        applied: all,
        recordedByKnex: all,
        pending: [],
      });
      // The store's own option is the default, and its migrate() has nothing to do.
      expect((await migrationStatus(named)).pending).toEqual([]);
      expect(await named.migrate()).toEqual({ applied: [], version: Math.max(...all) });
      expect(await ownRecordExists(store)).toBe(false);

      // Not named, and not knex's default name: not seen, as docs/store.md says.
      const unseen = await migrationStatus(store);
      expect(unseen.version).toBe(0);
      expect(unseen.applied).toEqual([]);
      expect(unseen.pending.map((m) => m.version)).toEqual(all);
      expect(
        (await migrationStatus(named, { knexMigrationsTable: false })).pending.map(
          (m) => m.version,
        ),
      ).toEqual(all);
    } finally {
      if (kind === 'postgres') await dropAll(store.knex, [schema], [tableName]);
      await named.close();
      await store.close();
    }
  });

  it('migrate() refuses, changing nothing, while knex has migrations pending; knex applies them', async () => {
    const schema = uniqueSchema('kxp');
    const knexSchema = `${schema}_k`;
    const store = await openStore(kind, schema, {
      knexMigrationsTable: `${knexSchema}.knex_migrations`,
    });
    const config = { tableName: 'knex_migrations', schemaName: knexSchema };
    try {
      await store.knex.raw(`create schema "${knexSchema}"`);
      await store.knex.migrate.latest({ ...config, migrationSource: sourceOf(schema, 1) });
      const all = await allVersions(schema);
      const last = all[all.length - 1]!;

      const before = await migrationStatus(store);
      expect(before.applied).toEqual(all.slice(0, -1));
      expect(before.pending.map((m) => m.version)).toEqual([last]);
      await expect(store.migrate()).rejects.toMatchObject({
        code: 'INVALID_CONFIG',
        message: expect.stringMatching(
          new RegExp(`schema ${schema} is migrated through knex's migrator .*nothing was changed`),
        ),
      });
      expect(await ownRecordExists(store)).toBe(false);
      expect((await migrationStatus(store)).pending.map((m) => m.version)).toEqual([last]);

      await store.knex.migrate.latest({ ...config, migrationSource: sourceOf(schema) });
      expect((await migrationStatus(store)).pending).toEqual([]);
      expect((await store.migrate()).applied).toEqual([]);
    } finally {
      if (kind === 'postgres') await dropAll(store.knex, [schema, knexSchema], []);
      await store.close();
    }
  });

  it("finds knex's default table, knex_migrations, without being told; false turns that off", async () => {
    const schema = uniqueSchema('kxd');
    // On PostgreSQL knex's default table goes first on the search path: a schema of its own
    // here, so that this test does not share public.knex_migrations with anything.
    const own =
      kind === 'postgres'
        ? createKnex({ client: 'pg', connection: databaseUrl(), searchPath: [`${schema}_path`] })
        : undefined;
    const store = await openStore(kind, schema, own === undefined ? {} : { knex: own });
    try {
      if (own !== undefined) await own.raw(`create schema "${schema}_path"`);
      await store.knex.migrate.latest({ migrationSource: sourceOf(schema, 1) });
      const all = await allVersions(schema);

      const found = await migrationStatus(store);
      expect(found.applied).toEqual(all.slice(0, -1));
      expect(found.recordedByKnex).toEqual(all.slice(0, -1));
      await expect(store.migrate()).rejects.toMatchObject({
        message: expect.stringContaining(
          `knex's table knex_migrations records ${all.length - 1} of its migrations`,
        ),
      });
      const off = await migrationStatus(store, { knexMigrationsTable: false });
      expect(off.applied).toEqual([]);
    } finally {
      if (own !== undefined) {
        await dropAll(own, [schema, `${schema}_path`], []);
        await own.destroy();
      }
      await store.close();
    }
  });
});

describe('knexMigrationsTable is checked', () => {
  let store: Store;
  beforeAll(async () => {
    store = await createStore({ knexMigrationsTable: 'app.knex_migrations' });
  });
  afterAll(() => store.close());

  it.each([['Bad-Name'], ['a.b.c'], [''], ['.x'], [42], [true]])(
    'createStore and migrationStatus refuse %j',
    async (value) => {
      const options = { knexMigrationsTable: value } as unknown as StoreOptions;
      await expect(createStore(options)).rejects.toMatchObject({
        code: 'INVALID_CONFIG',
        message: expect.stringContaining('knexMigrationsTable must be false, or'),
      });
      await expect(
        migrationStatus(store, options as { knexMigrationsTable?: string }),
      ).rejects.toMatchObject({ code: 'INVALID_CONFIG' });
    },
  );

  it('migrationStatus refuses an option it does not know, naming the one meant', async () => {
    await expect(
      migrationStatus(store, { knexMigrationTable: 'x' } as unknown as {
        knexMigrationsTable?: string;
      }),
    ).rejects.toMatchObject({
      code: 'INVALID_CONFIG',
      message: expect.stringContaining('did you mean `knexMigrationsTable`?'),
    });
  });
});
