import { ConfigurationError, createStore, migrationStatus, rowsOf } from '../src';
import { mysqlUrl, openTestStore, uniqueSchema } from './db';

describe('a MySQL or MariaDB store', () => {
  it('reports its dialect, quotes its names with backticks, and migrates once', async () => {
    const store = await openTestStore('mysql', { tablePrefix: 'jo_' });
    try {
      expect(store.dialect).toBe('mysql');
      expect(store.preparedStatements).toBe(false);
      expect(store.names.table('outbox')).toBe(`\`${store.schema}\`.\`jo_outbox\``);
      expect(await store.migrate()).toEqual({ applied: [], version: 2 });
      expect(await migrationStatus(store)).toEqual({
        version: 2,
        applied: [1, 2],
        recordedByKnex: [],
        pending: [],
      });
      const tables = rowsOf<{ name: string }>(
        await store.knex.raw(
          'select table_name as name from information_schema.tables where table_schema = ? order by 1',
          [store.schema],
        ),
      ).map((row) => row.name);
      expect(tables).toEqual([
        'jo_consumer_activity',
        'jo_consumer_resilience',
        'jo_dead_letters',
        'jo_idempotency',
        'jo_inbox_attempts',
        'jo_inbox_offsets',
        'jo_inbox_records',
        'jo_migrations',
        'jo_outbox',
      ]);
    } finally {
      await store.dispose();
    }
  });

  it('migrates from several processes at once: one applies, the others find it done', async () => {
    const schema = uniqueSchema('my');
    const stores = await Promise.all(
      [1, 2, 3].map(() => createStore({ connectionString: mysqlUrl(), schema })),
    );
    try {
      const results = await Promise.all(stores.map((store) => store.migrate()));
      expect(results.flatMap((result) => result.applied)).toEqual([1, 2]);
      expect(results.every((result) => result.version === 2)).toBe(true);
    } finally {
      await stores[0]?.knex.raw(`drop database if exists \`${schema}\``);
      await Promise.all(stores.map((store) => store.close()));
    }
  });

  it('has every migration pending, creating nothing, before the first migrate', async () => {
    const schema = uniqueSchema('my');
    const store = await createStore({ connectionString: mysqlUrl(), schema });
    try {
      const status = await migrationStatus(store);
      expect(status).toMatchObject({
        version: 0,
        applied: [],
        pending: [{ version: 1 }, { version: 2 }],
      });
      const found = rowsOf(
        await store.knex.raw('select 1 from information_schema.schemata where schema_name = ?', [
          schema,
        ]),
      );
      expect(found).toEqual([]);
    } finally {
      await store.close();
    }
  });

  it('runs its sessions in UTC at READ COMMITTED, on the database clock to the microsecond', async () => {
    const store = await openTestStore('mysql');
    try {
      const [row] = rowsOf<{ tz: string; iso: string; now: Date }>(
        await store.knex.raw(
          `select @@session.time_zone as tz, @@session.tx_isolation as iso,
                  current_timestamp(6) as now`,
        ),
      );
      expect(row?.tz).toBe('+00:00');
      expect(row?.iso).toBe('READ-COMMITTED');
      expect(Math.abs((row?.now.getTime() ?? 0) - Date.now())).toBeLessThan(60_000);
    } finally {
      await store.dispose();
    }
  });

  it('refuses what only PostgreSQL has: the partitioned layout, the distributable schema, the knex migrations table', async () => {
    await expect(
      createStore({ connectionString: mysqlUrl(), layout: 'partitioned' }),
    ).rejects.toThrow(ConfigurationError);
    await expect(
      createStore({ connectionString: mysqlUrl(), distribution: 'distributable' }),
    ).rejects.toThrow(/PostgreSQL's; MySQL and MariaDB keep the plain schema/);
    await expect(
      createStore({ connectionString: mysqlUrl(), knexMigrationsTable: 'knex_migrations' }),
    ).rejects.toThrow(/knexMigrationsTable applies to PostgreSQL/);
  });
});
