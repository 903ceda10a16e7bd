import { PGlite } from '@electric-sql/pglite';
import { DrizzleQueryError, eq, sql } from 'drizzle-orm';
import { drizzle as drizzleNodePg, type NodePgDatabase } from 'drizzle-orm/node-postgres';
import { integer, pgSchema, text } from 'drizzle-orm/pg-core';
import { drizzle as drizzlePglite, type PgliteDatabase } from 'drizzle-orm/pglite';
import fc from 'fast-check';
import { Pool } from 'pg';
import { drizzleTransactions, type DrizzleTransaction } from '../src/adapters/drizzle';
import type { TransactionAdapter } from '../src/transactions/types';
import { databaseUrl, uniqueSchema } from './db';
import {
  expectJsonRoundTrip,
  expectFailedState,
  expectRefused,
  jsonValues,
  NOT_TRANSACTIONS,
  RUNS,
} from './adapters-support';

const schemaName = uniqueSchema('adapters_drizzle');
const shop = pgSchema(schemaName);
const orders = shop.table('orders', {
  id: text('id').primaryKey(),
  total: integer('total').notNull(),
  note: text('note'),
});
const schema = { orders };

// The adapter's Tx is exactly the transaction `db.transaction` hands its callback.
type Equal<A, B> =
  (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
type CallbackTx<Db extends { transaction: (work: never) => unknown }> = Parameters<
  Parameters<Db['transaction']>[0]
>[0];
type AdapterTx<A> = A extends TransactionAdapter<infer Tx> ? Tx : never;
type NodeDb = NodePgDatabase<typeof schema>;
type LiteDb = PgliteDatabase<typeof schema>;
const _nodeAdapter = (db: NodeDb) => drizzleTransactions(db);
const _liteAdapter = (db: LiteDb) => drizzleTransactions(db);
const nodeTxIsExact: Equal<AdapterTx<ReturnType<typeof _nodeAdapter>>, CallbackTx<NodeDb>> = true;
const liteTxIsExact: Equal<AdapterTx<ReturnType<typeof _liteAdapter>>, CallbackTx<LiteDb>> = true;
const helperIsExact: Equal<DrizzleTransaction<NodeDb>, CallbackTx<NodeDb>> = true;

/** Never called: `tsc` checks that the table's types reach a handler's transaction. */
export function typedInsert(tx: DrizzleTransaction<NodeDb>): void {
  void tx.insert(orders).values({ id: 'typed', total: 1 });
  // @ts-expect-error `total` is an integer column
  void tx.insert(orders).values({ id: 'typed', total: 'one' });
}

type Kind = 'node-postgres' | 'pglite';

describe.each<Kind>(['node-postgres', 'pglite'])('drizzleTransactions on %s', (kind) => {
  // Typed as the node-postgres database on both: what each driver's handlers see is checked
  // above, and the adapter does not tell them apart by type at run time.
  let db: NodeDb;
  let close: () => Promise<void>;
  const items = `"${schemaName}".orders`;

  beforeAll(async () => {
    if (kind === 'node-postgres') {
      const pool = new Pool({ connectionString: databaseUrl(), max: 4 });
      db = drizzleNodePg(pool, { schema });
      close = () => pool.end();
    } else {
      const pglite = new PGlite();
      db = drizzlePglite(pglite, { schema }) as unknown as NodeDb;
      close = () => pglite.close();
    }
    await db.execute(sql`create schema ${sql.identifier(schemaName)}`);
    await db.execute(
      sql`create table ${orders} (id text primary key, total integer not null, note text)`,
    );
  });

  afterAll(async () => {
    await db.execute(sql`drop schema if exists ${sql.identifier(schemaName)} cascade`);
    await close();
  });

  const adapter = () => drizzleTransactions(db);
  type Tx = CallbackTx<NodeDb>;
  const ids = async () => (await db.select({ id: orders.id }).from(orders)).map((r) => r.id);

  async function rolledBack(work: (tx: Tx) => Promise<void>): Promise<void> {
    const rollback = new Error('roll back');
    await expect(
      adapter().transaction(async (tx) => {
        await work(tx);
        throw rollback;
      }),
    ).rejects.toBe(rollback);
  }

  it('names its library, and its Tx is the callback transaction', () => {
    expect(adapter().library).toBe('drizzle');
    expect([nodeTxIsExact, liteTxIsExact, helperIsExact]).toEqual([true, true, true]);
  });

  it('commits the work, written with the typed table, and returns its result', async () => {
    const result = await adapter().transaction(async (tx) => {
      await tx.insert(orders).values({ id: 'committed', total: 3 });
      return 'done';
    });
    expect(result).toBe('done');
    expect(await ids()).toContain('committed');
  });

  it('rolls back when the work throws, leaving no row', async () => {
    await rolledBack(async (tx) => {
      await tx.insert(orders).values({ id: 'rolled-back', total: 1 });
    });
    expect(await ids()).not.toContain('rolled-back');
  });

  it('enter(tx).query runs in that transaction, and its rows go with a rollback', async () => {
    await rolledBack(async (tx) => {
      const entered = adapter().enter(tx);
      const text = `insert into ${items} (id, total, note) values ($1, $2, $3)`;
      expect(await entered.query(text, ['via-query', 7, 'n'])).toEqual({ rows: [], rowCount: 1 });
      const seen = await tx.select().from(orders).where(eq(orders.id, 'via-query'));
      expect(seen).toEqual([{ id: 'via-query', total: 7, note: 'n' }]);
    });
    expect(await ids()).not.toContain('via-query');
  });

  it('query binds $n in any order and reused, and counts rows', async () => {
    await rolledBack(async (tx) => {
      const entered = adapter().enter(tx);
      const reordered = await entered.query(
        'select $2::text as b, $1::int as a, $1::int + 1 as c',
        [41, 'x'],
      );
      expect(reordered).toEqual({ rows: [{ b: 'x', a: 41, c: 42 }], rowCount: 1 });
      const insert = `insert into ${items} (id, total) values ($1, $2), ($3, $2)`;
      expect((await entered.query(insert, ['count-1', 0, 'count-2'])).rowCount).toBe(2);
      const select = `select id from ${items} where id like $1 order by id`;
      expect((await entered.query(select, ['count-%'])).rowCount).toBe(2);
      const update = `update ${items} set note = $1 where id = $2`;
      expect((await entered.query(update, ['u', 'count-9'])).rowCount).toBe(0);
    });
  });

  it("query throws the driver's error (with its SQLSTATE), not drizzle's wrapper", async () => {
    await rolledBack(async (tx) => {
      const failed = adapter().enter(tx).query('select 1 / $1::int as x', [0]);
      await expect(failed).rejects.toMatchObject({ code: '22012' });
      await expect(failed).rejects.not.toBeInstanceOf(DrizzleQueryError);
    });
  });

  if (kind === 'node-postgres') {
    it('state() reports active, then failed after a failed statement; enter then refuses', async () => {
      await rolledBack(async (tx) => {
        const entered = adapter().enter(tx);
        expect(entered.state()).toBe('active');
        await expect(tx.execute(sql`select 1 / 0`)).rejects.toThrow();
        await expectFailedState(entered);
        expectRefused(() => adapter().enter(tx), 'drizzle', 'failed');
      });
    });
  } else {
    it('state() is undefined while the transaction is open: the server is asked instead', async () => {
      await rolledBack(async (tx) => {
        expect(adapter().enter(tx).state()).toBeUndefined();
      });
    });
  }

  it.each(NOT_TRANSACTIONS)('enter refuses %s as not a transaction', (_label, value) => {
    expectRefused(() => adapter().enter(value as Tx), 'drizzle', 'not-a-transaction');
  });

  it('enter refuses the database itself as not a transaction', () => {
    expectRefused(() => adapter().enter(db as unknown as Tx), 'drizzle', 'not-a-transaction');
  });

  it('enter refuses a transaction that has committed or rolled back', async () => {
    let committed: Tx | undefined;
    let entered: ReturnType<ReturnType<typeof adapter>['enter']> | undefined;
    await adapter().transaction(async (tx) => {
      committed = tx;
      entered = adapter().enter(tx);
    });
    expectRefused(() => adapter().enter(committed!), 'drizzle', 'finished');
    expect(entered!.state()).toBe('idle');
    let rolled: Tx | undefined;
    await rolledBack(async (tx) => {
      rolled = tx;
    });
    expectRefused(() => adapter().enter(rolled!), 'drizzle', 'finished');
  });

  it('enter refuses a transaction drizzle opened itself, once it has ended', async () => {
    let own: Tx | undefined;
    await db.transaction(async (tx) => {
      own = tx;
      await adapter().enter(tx).query(`insert into ${items} (id, total) values ($1, 0)`, ['own']);
    });
    expectRefused(() => adapter().enter(own!), 'drizzle', 'finished');
    expect(await ids()).toContain('own');
  });

  it('round-trips any JSON value as a parameter', async () => {
    const json = adapter();
    await fc.assert(
      fc.asyncProperty(jsonValues, (value) =>
        json.transaction((tx) => {
          const entered = json.enter(tx);
          return expectJsonRoundTrip((text, values) => entered.query(text, values), value);
        }),
      ),
      { numRuns: RUNS },
    );
  });
});
