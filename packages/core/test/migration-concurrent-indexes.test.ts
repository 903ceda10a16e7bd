/**
 * The live path docs/store.md gives for the indexes of migrations 10 (a large `idempotency`)
 * and 14 (a large `consumer_activity`): build each `concurrently` beforehand, with the
 * migration's own definition, while writers go on; the migration then finds them
 * (`if not exists`), builds nothing, and leaves the same indexes a fresh schema gets.
 */
import { Client } from 'pg';
import { createStore, rowsOf, type Store } from '../src';
import { migrate } from '../src/store/migrate';
import { migrations } from '../src/store/migrations';
import { databaseUrl, openTestStore, uniqueSchema } from './db';

/** The indexes of `table`, by name: their definitions without the schema, and their oids. */
async function indexes(store: Store, table: string): Promise<Map<string, [string, number]>> {
  const rows = rowsOf<{ name: string; definition: string; oid: number }>(
    await store.knex.raw(
      `select c.relname as name, pg_get_indexdef(i.indexrelid) as definition,
              i.indexrelid::bigint as oid
         from pg_index i join pg_class c on c.oid = i.indexrelid
        where i.indrelid = to_regclass(?)`,
      [store.names.table(table)],
    ),
  );
  const schema = `${store.names.schema.replace(/"/g, '')}.`;
  return new Map(
    rows.map((r) => [r.name, [r.definition.split(schema).join(''), Number(r.oid)] as const]),
  ) as Map<string, [string, number]>;
}

/** A migration whose indexes docs/store.md says to build `concurrently` beforehand. */
interface LiveCase {
  readonly version: number;
  readonly table: string;
  /** Writes `count` rows of `table` from `from` on, as the live application would. */
  readonly write: (store: Store, from: number, count: number) => Promise<unknown>;
}

const LIVE_CASES: readonly LiveCase[] = [
  {
    version: 10,
    table: 'idempotency',
    write: (store, from, count) =>
      store.knex.raw(
        `insert into ${store.names.table('idempotency')}
           (scope, operation, key, status, owner_id, expires_at)
         select 'default', 'op', 'k-' || g, 'SUCCEEDED', 'o', now() + interval '1 day'
           from generate_series(?::integer, ?::integer) g`,
        [from, from + count - 1],
      ),
  },
  {
    version: 14,
    table: 'consumer_activity',
    write: (store, from, count) =>
      store.knex.raw(
        `insert into ${store.names.table('consumer_activity')}
           (consumer, minute, handled, duplicates, dead_lettered)
         select 'consumer-' || (g % 50), date_trunc('minute', now()) - g * interval '1 minute',
                1, 0, 0
           from generate_series(?::integer, ?::integer) g`,
        [from, from + count - 1],
      ),
  },
];

describe.each(LIVE_CASES)(
  "migration $version's indexes built concurrently beforehand (postgres)",
  ({ version, table, write }) => {
    it('migrates without building them again, to the indexes a fresh schema has', async () => {
      const schema = uniqueSchema('idx');
      const store = await createStore({ connectionString: databaseUrl(), schema });
      const fresh = await openTestStore('postgres');
      let writing = true;
      try {
        await migrate(
          store.knex,
          store.names,
          migrations.filter((m) => m.version < version),
        );
        await write(store, 1, 20_000);
        // A writer goes on while the indexes are built: a concurrent build takes no write lock.
        let written = 20_000;
        const writer = (async () => {
          while (writing) {
            await write(store, written + 1, 10);
            written += 10;
          }
        })();
        // As an operator would in psql: a session of its own, no statement timeout. A
        // concurrent build waits for every older transaction of the database, other suites'
        // included.
        const operator = new Client({ connectionString: databaseUrl() });
        await operator.connect();
        try {
          const migration = migrations.find((m) => m.version === version)!;
          for (const statement of migration.up(store.names)) {
            await operator.query(statement.replace(/^create index/, 'create index concurrently'));
          }
        } finally {
          await operator.end();
        }
        writing = false;
        await writer;
        const built = await indexes(store, table);

        const result = await store.migrate();
        expect(result.applied).toEqual(
          migrations.filter((m) => m.version >= version).map((m) => m.version),
        );
        // Not built again: the same index objects.
        expect(await indexes(store, table)).toEqual(built);
        const valid = rowsOf<{ n: string }>(
          await store.knex.raw(
            `select count(*) as n from pg_index where indrelid = to_regclass(?) and not indisvalid`,
            [store.names.table(table)],
          ),
        );
        expect(Number(valid[0]!.n)).toBe(0);
        const definitions = (m: Map<string, [string, number]>) =>
          [...m.entries()].map(([name, [definition]]) => [name, definition]).sort();
        expect(definitions(built)).toEqual(definitions(await indexes(fresh, table)));
        expect(written).toBeGreaterThan(20_000);
      } finally {
        writing = false;
        await store.knex.raw(`drop schema if exists ${store.names.schema} cascade`);
        await store.close();
        await fresh.dispose();
      }
    }, 300_000);
  },
);
