import { uniqueSchema } from './db';
import { describeTransactionContract } from './transaction-contract';
import { openKyselyLibrary } from './fixtures/transaction-contract-kysely';

// PostgreSQL only: on PGlite, kysely-pglite takes no lock across a transaction, so the
// store's own statements would run inside an open handler transaction (unsupported).
describeTransactionContract(
  'kysely on PostgreSQL',
  () =>
    openKyselyLibrary({
      dialect: 'postgres',
      schema: uniqueSchema('contract_kysely'),
      create: true,
    }),
  {
    // Kysely's `Transaction` has no savepoints (only `startTransaction()`'s controlled one).
    savepoints: false,
    sigkill: true,
    // A transaction from `db.transaction().execute()` that has ended passes `enter` (the
    // adapter only tracks those it opened); Kysely itself then refuses the first statement
    // with a plain Error ('Transaction is already committed'), so nothing is written.
    knownGaps: ['refuse-finished-native'],
  },
);
