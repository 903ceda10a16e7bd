import type { Knex } from 'knex';
import { createOperations, knexTransactions, rowsOf } from '../src';
import { openTestStore } from './db';

/** The texts knex ran itself, as its `query` event reports them. */
function knexQueries(knex: Knex): { texts: string[]; stop: () => void } {
  const texts: string[] = [];
  const listener = (query: { sql: string }): void => void texts.push(query.sql);
  knex.on('query', listener);
  return { texts, stop: () => void knex.off('query', listener) };
}

describe("justonce's statements in a knex transaction, on postgres", () => {
  it("go to the transaction's own connection as named prepared statements, past knex", async () => {
    const store = await openTestStore('postgres');
    const seen = knexQueries(store.knex);
    try {
      const ops = createOperations({ store, operation: 'driver' });
      const t = store.names.table('idempotency');
      let business: Knex.Transaction | undefined;
      let inSession: Array<{ name: string; statement: string }> = [];
      await ops.runInTransaction(
        'k1',
        { n: 1 },
        async (trx: Knex.Transaction) => {
          business = trx;
          return 'done';
        },
        {
          // After the completion, still inside the business transaction: its session.
          onStep: async (step) => {
            if (step !== 'effect-done') return;
            inSession = rowsOf(
              await business!.raw('select name, statement from pg_prepared_statements'),
            );
          },
        },
      );
      const completion = inSession.filter(
        (row) => row.statement.startsWith(`update ${t}`) && row.statement.includes("'IN_PROGRESS'"),
      );
      expect(completion).toHaveLength(1);
      expect(completion[0]!.name).toMatch(/^justonce_[0-9a-f]{32}(_\d+)?$/);
      // knex saw the transaction's BEGIN and COMMIT and the probe above, not the completion.
      expect(seen.texts.some((sql) => sql.includes(t))).toBe(false);
      expect(seen.texts.some((sql) => sql.includes('pg_prepared_statements'))).toBe(true);
    } finally {
      seen.stop();
      await store.dispose();
    }
  });
});

describe.each(['postgres', 'pglite'] as const)('a knex transaction on %s', (kind) => {
  it("is not taken for usable after one of justonce's statements failed in it", async () => {
    const store = await openTestStore(kind);
    try {
      const adapter = knexTransactions(store.knex);
      await store.knex
        .transaction(async (trx) => {
          const tx = adapter.enter(trx);
          expect(tx.state()).toBe('active');
          await expect(tx.query('select 1 / $1::int', [0])).rejects.toMatchObject({
            code: '22012',
          });
          // Only the server can tell whether a savepoint recovered it: not 'active'.
          expect(tx.state()).toBeUndefined();
          throw new Error('roll back');
        })
        .catch((error: Error) => expect(error.message).toBe('roll back'));
    } finally {
      await store.dispose();
    }
  });
});
