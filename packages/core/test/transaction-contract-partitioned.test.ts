import { rowsOf } from '../src';
import { uniqueSchema } from './db';
import { describeTransactionContract } from './transaction-contract';
import { openKnexLibrary } from './fixtures/transaction-contract-knex';

// The whole contract, the SIGKILL clause included, on a store whose inbox records and outbox
// are partitioned (docs/store.md, "Partitioned layout"): the inbox's dedup, dead-lettering
// and concurrent deliveries go through the partitioned inbox_records and its dedup trigger,
// the outbox's events (committed or rolled back with the business transaction) through the
// partitioned outbox and its own trigger. Operations' table is the same on both layouts. One library is enough: the layout is the store's, not the adapter's.
// PGlite's partitioned layout is covered by store-partitioned*.test.ts; the contract runs
// once, on PostgreSQL, to keep CI's time.
describeTransactionContract(
  'knex on PostgreSQL, partitioned layout',
  async () => {
    const library = await openKnexLibrary({
      dialect: 'postgres',
      schema: uniqueSchema('contract_part'),
      create: true,
      layout: 'partitioned',
    });
    // The contract must run on the partitioned tables, not on plain ones left behind.
    const { store } = library;
    const kinds = await store.knex.raw(
      `select relkind::text as kind from pg_class where oid in (to_regclass(?), to_regclass(?))`,
      [store.names.table('inbox_records'), store.names.table('outbox')],
    );
    const found = rowsOf<{ kind: string }>(kinds).map((r) => r.kind);
    if (found.join() !== 'p,p') throw new Error(`expected two partitioned tables, got ${found}`);
    return library;
  },
  { savepoints: true, sigkill: true },
);
