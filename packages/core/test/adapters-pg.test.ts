import fc from 'fast-check';
import { Pool, type PoolClient } from 'pg';
import { pgTransactions, withTransaction } from '../src/adapters/pg';
import { databaseUrl, uniqueSchema } from './db';
import {
  expectJsonRoundTrip,
  expectFailedState,
  expectRefused,
  jsonValues,
  NOT_TRANSACTIONS,
  RUNS,
} from './adapters-support';

const schema = uniqueSchema('adapters_pg');
const items = `"${schema}".items`;
let pool: Pool;

beforeAll(async () => {
  pool = new Pool({ connectionString: databaseUrl(), max: 4 });
  await pool.query(`create schema "${schema}"`);
  await pool.query(`create table ${items} (id text primary key, note text)`);
});

afterAll(async () => {
  await pool.query(`drop schema if exists "${schema}" cascade`);
  await pool.end();
});

async function ids(): Promise<string[]> {
  const { rows } = await pool.query<{ id: string }>(`select id from ${items} order by id`);
  return rows.map((row) => row.id);
}

/** Runs `work`, then rolls back by throwing; resolves once the rollback is done. */
async function rolledBack(work: (client: PoolClient) => Promise<void>): Promise<void> {
  const rollback = new Error('roll back');
  await expect(
    pgTransactions(pool).transaction(async (client) => {
      await work(client);
      throw rollback;
    }),
  ).rejects.toBe(rollback);
}

describe('pgTransactions', () => {
  const adapter = () => pgTransactions(pool);

  it('names its library', () => {
    expect(adapter().library).toBe('pg');
  });

  it('commits the work and returns its result', async () => {
    const result = await adapter().transaction(async (client) => {
      await client.query(`insert into ${items} (id) values ($1)`, ['committed']);
      return 'done';
    });
    expect(result).toBe('done');
    expect(await ids()).toContain('committed');
  });

  it('rolls back when the work throws, leaving no row', async () => {
    await rolledBack(async (client) => {
      await client.query(`insert into ${items} (id) values ($1)`, ['rolled-back']);
    });
    expect(await ids()).not.toContain('rolled-back');
  });

  it('enter(tx).query runs in that transaction, and its rows go with a rollback', async () => {
    await rolledBack(async (client) => {
      const tx = adapter().enter(client);
      expect(tx.dialect).toBe('postgres');
      const inserted = await tx.query(`insert into ${items} (id, note) values ($1, $2)`, [
        'via-query',
        'n',
      ]);
      expect(inserted).toEqual({ rows: [], rowCount: 1 });
      const seen = await client.query(`select note from ${items} where id = $1`, ['via-query']);
      expect(seen.rows).toEqual([{ note: 'n' }]);
      expect(await ids()).not.toContain('via-query');
    });
    expect(await ids()).not.toContain('via-query');
  });

  it('binds $n placeholders in any order, reused, and under a prepared name', async () => {
    await adapter().transaction(async (client) => {
      const tx = adapter().enter(client);
      const text = 'select $2::text as b, $1::int as a, $1::int + 1 as c';
      const result = await tx.query(text, [41, 'x']);
      expect(result).toEqual({ rows: [{ b: 'x', a: 41, c: 42 }], rowCount: 1 });
      const named = await tx.query(text, [1, 'y'], { name: `jo_adapters_${schema}` });
      expect(named.rows).toEqual([{ b: 'y', a: 1, c: 2 }]);
    });
  });

  it('state() reports active, then failed after a failed statement; enter then refuses', async () => {
    await rolledBack(async (client) => {
      const tx = adapter().enter(client);
      expect(tx.state()).toBe('active');
      await expect(client.query('select 1 / 0')).rejects.toMatchObject({ code: '22012' });
      await expectFailedState(tx);
      expectRefused(() => adapter().enter(client), 'pg', 'failed');
    });
  });

  it.each(NOT_TRANSACTIONS)('enter refuses %s as not a transaction', (_label, value) => {
    expectRefused(() => adapter().enter(value as PoolClient), 'pg', 'not-a-transaction');
  });

  it('enter refuses the pool itself as not a transaction', () => {
    expectRefused(() => adapter().enter(pool as unknown as PoolClient), 'pg', 'not-a-transaction');
  });

  it('enter refuses a client with no transaction open, before any SQL', async () => {
    const client = await pool.connect();
    const query = jest.spyOn(client, 'query');
    try {
      expectRefused(() => adapter().enter(client), 'pg', 'not-in-transaction');
    } finally {
      client.release();
    }
    expectRefused(() => adapter().enter(client), 'pg', 'not-in-transaction');
    expect(query).not.toHaveBeenCalled();
    query.mockRestore();
  });

  it('enter refuses a transaction that has committed or rolled back', async () => {
    let committed: PoolClient | undefined;
    await adapter().transaction(async (client) => {
      committed = client;
    });
    expectRefused(() => adapter().enter(committed!), 'pg', 'finished');
    let rolled: PoolClient | undefined;
    await rolledBack(async (client) => {
      rolled = client;
    });
    expectRefused(() => adapter().enter(rolled!), 'pg', 'finished');
  });

  it('state() reports idle once the transaction has ended', async () => {
    let entered: ReturnType<ReturnType<typeof adapter>['enter']> | undefined;
    await adapter().transaction(async (client) => {
      entered = adapter().enter(client);
    });
    expect(entered!.state()).toBe('idle');
  });
});

describe('withTransaction', () => {
  it('releases a client whose ROLLBACK failed with an error, so the pool drops it', async () => {
    const own = new Pool({ connectionString: databaseUrl(), max: 1 });
    try {
      const failure = new Error('work failed');
      let pid = 0;
      await expect(
        withTransaction(own, async (client) => {
          // The server ends this session: its ROLLBACK cannot run.
          client.on('error', () => undefined);
          pid = (await client.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]!
            .pid;
          await pool.query('select pg_terminate_backend($1)', [pid]);
          throw failure;
        }),
      ).rejects.toBe(failure);
      expect(own.totalCount).toBe(0);
      const next = await own.query<{ pid: number }>('select pg_backend_pid() as pid');
      expect(next.rows[0]!.pid).not.toBe(pid);
    } finally {
      await own.end();
    }
  });

  it('gives the client back to the pool after a commit', async () => {
    const own = new Pool({ connectionString: databaseUrl(), max: 1 });
    try {
      await withTransaction(own, async (client) => client.query('select 1'));
      expect({ total: own.totalCount, idle: own.idleCount }).toEqual({ total: 1, idle: 1 });
    } finally {
      await own.end();
    }
  });
});

describe('pgTransactions query on PostgreSQL', () => {
  it('round-trips any JSON value as a parameter', async () => {
    const adapter = pgTransactions(pool);
    await fc.assert(
      fc.asyncProperty(jsonValues, (value) =>
        adapter.transaction((client) => {
          const tx = adapter.enter(client);
          return expectJsonRoundTrip((text, values) => tx.query(text, values), value);
        }),
      ),
      { numRuns: RUNS },
    );
  });
});
