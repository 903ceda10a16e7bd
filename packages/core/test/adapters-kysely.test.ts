import fc from 'fast-check';
import {
  CamelCasePlugin,
  Kysely,
  PostgresDialect,
  sql,
  type Dialect,
  type Transaction,
} from 'kysely';
import type * as KyselyPGliteModule from 'kysely-pglite';
import { Pool } from 'pg';
import { kyselyTransactions } from '../src/adapters/kysely';
import { databaseUrl, uniqueSchema } from './db';
import {
  expectJsonRoundTrip,
  expectRefused,
  jsonValues,
  NOT_TRANSACTIONS,
  RUNS,
} from './adapters-support';

interface Database {
  items: { id: string; note: string | null };
}

type Kind = 'postgres' | 'pglite';

/**
 * kysely-pglite ships ES modules only, which Jest's CommonJS runtime cannot `require`, and the
 * test transform turns a plain `import()` into a `require`: an `import()` it does not see goes
 * to Jest's ES module loader (`--experimental-vm-modules`) instead.
 */
const importModule = new Function('specifier', 'return import(specifier)') as (
  specifier: string,
) => Promise<unknown>;

/** A Kysely on PostgreSQL (node-postgres pool) or on an in-memory PGlite, in its own schema. */
async function openKysely(kind: Kind, schema: string): Promise<Kysely<Database>> {
  let dialect: Dialect;
  if (kind === 'postgres') {
    dialect = new PostgresDialect({ pool: new Pool({ connectionString: databaseUrl(), max: 4 }) });
  } else {
    const { KyselyPGlite } = (await importModule('kysely-pglite')) as typeof KyselyPGliteModule;
    dialect = (await KyselyPGlite.create()).dialect;
  }
  const root = new Kysely<Database>({ dialect });
  await sql`create schema ${sql.id(schema)}`.execute(root);
  await sql`create table ${sql.id(schema, 'items')} (id text primary key, note text)`.execute(root);
  return root.withSchema(schema);
}

describe.each<Kind>(['postgres', 'pglite'])('kyselyTransactions on %s', (kind) => {
  const schema = uniqueSchema('adapters_kysely');
  const items = `"${schema}".items`;
  let db: Kysely<Database>;

  beforeAll(async () => {
    db = await openKysely(kind, schema);
  });

  afterAll(async () => {
    await sql`drop schema if exists ${sql.id(schema)} cascade`.execute(db);
    await db.destroy();
  });

  const ids = async () => (await db.selectFrom('items').select('id').execute()).map((r) => r.id);

  async function rolledBack(work: (tx: Transaction<Database>) => Promise<void>): Promise<void> {
    const rollback = new Error('roll back');
    await expect(
      kyselyTransactions(db).transaction(async (tx) => {
        await work(tx);
        throw rollback;
      }),
    ).rejects.toBe(rollback);
  }

  it('names its library', () => {
    expect(kyselyTransactions(db).library).toBe('kysely');
  });

  it('commits the work and returns its result', async () => {
    const result = await kyselyTransactions(db).transaction(async (tx) => {
      await tx.insertInto('items').values({ id: 'committed', note: null }).execute();
      return 'done';
    });
    expect(result).toBe('done');
    expect(await ids()).toContain('committed');
  });

  it('rolls back when the work throws, leaving no row', async () => {
    await rolledBack(async (tx) => {
      await tx.insertInto('items').values({ id: 'rolled-back', note: null }).execute();
    });
    expect(await ids()).not.toContain('rolled-back');
  });

  it('enter(tx).query runs in that transaction, and its rows go with a rollback', async () => {
    await rolledBack(async (tx) => {
      const entered = kyselyTransactions(db).enter(tx);
      const inserted = await entered.query(`insert into ${items} (id, note) values ($1, $2)`, [
        'via-query',
        'n',
      ]);
      expect(inserted).toEqual({ rows: [], rowCount: 1 });
      const seen = await tx
        .selectFrom('items')
        .select('note')
        .where('id', '=', 'via-query')
        .execute();
      expect(seen).toEqual([{ note: 'n' }]);
    });
    expect(await ids()).not.toContain('via-query');
  });

  it('query counts rows returned and rows affected', async () => {
    await rolledBack(async (tx) => {
      const entered = kyselyTransactions(db).enter(tx);
      const insert = `insert into ${items} (id) values ($1), ($2)`;
      expect((await entered.query(insert, ['count-1', 'count-2'])).rowCount).toBe(2);
      const select = `select id from ${items} where id like $1 order by id`;
      const selected = await entered.query(select, ['count-%']);
      expect(selected).toEqual({ rows: [{ id: 'count-1' }, { id: 'count-2' }], rowCount: 2 });
      const update = `update ${items} set note = $1 where id = $2`;
      const updated = await entered.query(update, ['u', 'count-9']);
      expect(updated.rowCount).toBe(0);
    });
  });

  it("query bypasses the transaction's plugins, which would rename result columns", async () => {
    const camel = db.withPlugin(new CamelCasePlugin());
    const adapter = kyselyTransactions(camel);
    await adapter.transaction(async (tx) => {
      const own = await sql<{ snakeCase: string }>`select 'v' as snake_case`.execute(tx);
      expect(own.rows).toEqual([{ snakeCase: 'v' }]);
      const result = await adapter.enter(tx).query('select $1::text as snake_case', ['v']);
      expect(result.rows).toEqual([{ snake_case: 'v' }]);
    });
  });

  it('state() is undefined while the transaction is open: the server is asked instead', async () => {
    await rolledBack(async (tx) => {
      expect(kyselyTransactions(db).enter(tx).state()).toBeUndefined();
    });
  });

  it.each(NOT_TRANSACTIONS)('enter refuses %s as not a transaction', (_label, value) => {
    expectRefused(
      () => kyselyTransactions(db).enter(value as Transaction<Database>),
      'kysely',
      'not-a-transaction',
    );
  });

  it('enter refuses the Kysely instance and a single connection as not a transaction', async () => {
    const adapter = kyselyTransactions(db);
    expectRefused(() => adapter.enter(db as Transaction<Database>), 'kysely', 'not-a-transaction');
    await db.connection().execute(async (connection) => {
      expectRefused(
        () => adapter.enter(connection as Transaction<Database>),
        'kysely',
        'not-a-transaction',
      );
    });
  });

  it('enter refuses a transaction that has committed or rolled back', async () => {
    const adapter = kyselyTransactions(db);
    let committed: Transaction<Database> | undefined;
    let entered: ReturnType<typeof adapter.enter> | undefined;
    await adapter.transaction(async (tx) => {
      committed = tx;
      entered = adapter.enter(tx);
    });
    expectRefused(() => adapter.enter(committed!), 'kysely', 'finished');
    expect(entered!.state()).toBe('idle');
    let rolled: Transaction<Database> | undefined;
    await rolledBack(async (tx) => {
      rolled = tx;
    });
    expectRefused(() => adapter.enter(rolled!), 'kysely', 'finished');
  });

  it('enter refuses a controlled transaction once committed', async () => {
    const adapter = kyselyTransactions(db);
    const controlled = await db.startTransaction().execute();
    await adapter.enter(controlled).query(`insert into ${items} (id) values ($1)`, ['controlled']);
    await controlled.commit().execute();
    expectRefused(() => adapter.enter(controlled), 'kysely', 'finished');
    expect(await ids()).toContain('controlled');
  });

  it('round-trips any JSON value as a parameter', async () => {
    const adapter = kyselyTransactions(db);
    await fc.assert(
      fc.asyncProperty(jsonValues, (value) =>
        adapter.transaction((tx) => {
          const entered = adapter.enter(tx);
          return expectJsonRoundTrip((text, values) => entered.query(text, values), value);
        }),
      ),
      { numRuns: RUNS },
    );
  });
});
