import { uniqueSchema } from './db';
import { describeTransactionContract } from './transaction-contract';
import { openKnexLibrary } from './fixtures/transaction-contract-knex';

// The whole contract, the SIGKILL clause included, on a store migrated with the distributable
// schema (docs/scaling.md): the outbox's rows carry their distribution key and its message ids
// are unique per key. The inbox's and operations' tables are the same on both schemas. One
// library is enough: the schema is the store's, not the adapter's. PGlite's distributable
// schema is covered by store-distributable.test.ts and outbox.test.ts.
describeTransactionContract(
  'knex on PostgreSQL, distributable schema',
  () =>
    openKnexLibrary({
      dialect: 'postgres',
      schema: uniqueSchema('contract_dist'),
      create: true,
      distribution: 'distributable',
    }),
  { savepoints: true, sigkill: true },
);
