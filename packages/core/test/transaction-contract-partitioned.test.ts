import { uniqueSchema } from './db';
import { describeTransactionContract } from './transaction-contract';
import { openKnexLibrary } from './fixtures/transaction-contract-knex';

// The whole contract, the SIGKILL clause included, on a store whose inbox records are
// partitioned (docs/store.md, "Partitioned layout"): the inbox's dedup, dead-lettering and
// concurrent deliveries go through the partitioned table and its dedup trigger. The outbox
// and operations' tables are the same on both layouts. One library is enough: the layout is
// the store's, not the adapter's. PGlite's partitioned layout is covered by
// store-partitioned.test.ts; the contract runs once, on PostgreSQL, to keep CI's time.
describeTransactionContract(
  'knex on PostgreSQL, partitioned layout',
  () =>
    openKnexLibrary({
      dialect: 'postgres',
      schema: uniqueSchema('contract_part'),
      create: true,
      layout: 'partitioned',
    }),
  { savepoints: true, sigkill: true },
);
