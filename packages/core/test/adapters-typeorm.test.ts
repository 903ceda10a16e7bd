import fc from 'fast-check';
import { DataSource, EntitySchema, type EntityManager } from 'typeorm';
import { typeormTransactions } from '../src/adapters/typeorm';
import { databaseUrl, uniqueSchema } from './db';
import {
  expectJsonRoundTrip,
  expectFailedState,
  expectRefused,
  jsonValues,
  NOT_TRANSACTIONS,
  RUNS,
} from './adapters-support';

const schema = uniqueSchema('adapters_typeorm');
const items = `"${schema}".items`;

interface Item {
  id: string;
  note: string | null;
}

const ItemEntity = new EntitySchema<Item>({
  name: 'Item',
  tableName: 'items',
  schema,
  columns: {
    id: { type: 'text', primary: true },
    note: { type: 'text', nullable: true },
  },
});

let dataSource: DataSource;

beforeAll(async () => {
  dataSource = await new DataSource({
    type: 'postgres',
    url: databaseUrl(),
    entities: [ItemEntity],
    poolSize: 4,
  }).initialize();
  await dataSource.query(`create schema "${schema}"`);
  await dataSource.query(`create table ${items} (id text primary key, note text)`);
});

afterAll(async () => {
  await dataSource.query(`drop schema if exists "${schema}" cascade`);
  await dataSource.destroy();
});

const adapter = () => typeormTransactions(dataSource);
const ids = async () => (await dataSource.getRepository(ItemEntity).find()).map((item) => item.id);

async function rolledBack(work: (manager: EntityManager) => Promise<void>): Promise<void> {
  const rollback = new Error('roll back');
  await expect(
    adapter().transaction(async (manager) => {
      await work(manager);
      throw rollback;
    }),
  ).rejects.toBe(rollback);
}

describe('typeormTransactions', () => {
  it('names its library', () => {
    expect(adapter().library).toBe('typeorm');
  });

  it('commits the work and returns its result', async () => {
    const result = await adapter().transaction(async (manager) => {
      await manager.getRepository(ItemEntity).insert({ id: 'committed', note: null });
      return 'done';
    });
    expect(result).toBe('done');
    expect(await ids()).toContain('committed');
  });

  it('rolls back when the work throws, leaving no row', async () => {
    await rolledBack(async (manager) => {
      await manager.getRepository(ItemEntity).insert({ id: 'rolled-back', note: null });
    });
    expect(await ids()).not.toContain('rolled-back');
  });

  it('enter(manager).query runs in that transaction, and its rows go with a rollback', async () => {
    await rolledBack(async (manager) => {
      const tx = adapter().enter(manager);
      const insert = `insert into ${items} (id, note) values ($1, $2)`;
      expect(await tx.query(insert, ['via-query', 'n'])).toEqual({ rows: [], rowCount: 1 });
      const seen = await manager.getRepository(ItemEntity).findOneBy({ id: 'via-query' });
      expect(seen).toEqual({ id: 'via-query', note: 'n' });
    });
    expect(await ids()).not.toContain('via-query');
  });

  it('query binds $n in any order and reused, and counts rows', async () => {
    await rolledBack(async (manager) => {
      const tx = adapter().enter(manager);
      const reordered = await tx.query('select $2::text as b, $1::int as a, $1::int + 1 as c', [
        41,
        'x',
      ]);
      expect(reordered).toEqual({ rows: [{ b: 'x', a: 41, c: 42 }], rowCount: 1 });
      const insert = `insert into ${items} (id) values ($1), ($2)`;
      expect((await tx.query(insert, ['count-1', 'count-2'])).rowCount).toBe(2);
      const select = `select id from ${items} where id like $1 order by id`;
      expect((await tx.query(select, ['count-%'])).rowCount).toBe(2);
      const update = `update ${items} set note = $1 where id = $2`;
      expect(await tx.query(update, ['u', 'count-9'])).toEqual({ rows: [], rowCount: 0 });
    });
  });

  it("query throws the driver's error (with its SQLSTATE), not TypeORM's wrapper", async () => {
    await rolledBack(async (manager) => {
      const failed = adapter().enter(manager).query('select 1 / $1::int as x', [0]);
      await expect(failed).rejects.toMatchObject({ code: '22012' });
      await expect(failed).rejects.not.toHaveProperty('parameters');
    });
  });

  it('state() reports active, then failed after a failed statement; enter then refuses', async () => {
    await rolledBack(async (manager) => {
      const tx = adapter().enter(manager);
      expect(tx.state()).toBe('active');
      await expect(manager.query('select 1 / 0')).rejects.toThrow();
      await expectFailedState(tx);
      expectRefused(() => adapter().enter(manager), 'typeorm', 'failed');
    });
  });

  it.each(NOT_TRANSACTIONS)('enter refuses %s as not a transaction', (_label, value) => {
    expectRefused(() => adapter().enter(value as EntityManager), 'typeorm', 'not-a-transaction');
  });

  it('enter refuses the data source itself as not a transaction', () => {
    const value = dataSource as unknown as EntityManager;
    expectRefused(() => adapter().enter(value), 'typeorm', 'not-a-transaction');
  });

  it('enter refuses a manager without a query runner, or whose runner has no transaction', async () => {
    expectRefused(() => adapter().enter(dataSource.manager), 'typeorm', 'not-in-transaction');
    const runner = dataSource.createQueryRunner();
    try {
      await runner.connect();
      const query = jest.spyOn(runner, 'query');
      expectRefused(() => adapter().enter(runner.manager), 'typeorm', 'not-in-transaction');
      expect(query).not.toHaveBeenCalled();
    } finally {
      await runner.release();
    }
    expectRefused(() => adapter().enter(runner.manager), 'typeorm', 'finished');
  });

  it('enter refuses a manager whose transaction has committed or rolled back', async () => {
    let committed: EntityManager | undefined;
    let entered: ReturnType<ReturnType<typeof adapter>['enter']> | undefined;
    await adapter().transaction(async (manager) => {
      committed = manager;
      entered = adapter().enter(manager);
    });
    expectRefused(() => adapter().enter(committed!), 'typeorm', 'finished');
    expect(entered!.state()).toBe('idle');
    let rolled: EntityManager | undefined;
    await rolledBack(async (manager) => {
      rolled = manager;
    });
    expectRefused(() => adapter().enter(rolled!), 'typeorm', 'finished');
  });

  it("enter accepts a query runner's own transaction, and refuses it once committed", async () => {
    const runner = dataSource.createQueryRunner();
    try {
      await runner.startTransaction();
      await adapter()
        .enter(runner.manager)
        .query(`insert into ${items} (id) values ($1)`, ['runner']);
      await runner.commitTransaction();
      expectRefused(() => adapter().enter(runner.manager), 'typeorm', 'not-in-transaction');
    } finally {
      await runner.release();
    }
    expect(await ids()).toContain('runner');
  });

  it('round-trips any JSON value as a parameter', async () => {
    const json = adapter();
    await fc.assert(
      fc.asyncProperty(jsonValues, (value) =>
        json.transaction((manager) => {
          const tx = json.enter(manager);
          return expectJsonRoundTrip((text, values) => tx.query(text, values), value);
        }),
      ),
      { numRuns: RUNS },
    );
  });
});
