import { uniqueSchema } from './db';
import { describeTransactionContract } from './transaction-contract';
import { openKnexLibrary } from './fixtures/transaction-contract-knex';

describeTransactionContract(
  'knex on PostgreSQL',
  () =>
    openKnexLibrary({ dialect: 'postgres', schema: uniqueSchema('contract_knex'), create: true }),
  { savepoints: true, sigkill: true },
);

// The store's own knex on the PGlite it was given: the one knex that can share a PGlite.
describeTransactionContract(
  'knex on PGlite',
  () => openKnexLibrary({ dialect: 'pglite', schema: uniqueSchema('contract_knex'), create: true }),
  { savepoints: true, sigkill: false },
);
