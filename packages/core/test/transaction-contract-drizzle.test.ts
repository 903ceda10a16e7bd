import { uniqueSchema } from './db';
import { describeTransactionContract } from './transaction-contract';
import {
  openDrizzleNodePgLibrary,
  openDrizzlePgliteLibrary,
} from './fixtures/transaction-contract-drizzle';

describeTransactionContract(
  'drizzle on PostgreSQL (node-postgres)',
  () =>
    openDrizzleNodePgLibrary({
      dialect: 'postgres',
      schema: uniqueSchema('contract_drizzle'),
      create: true,
    }),
  { savepoints: true, sigkill: true },
);

// One PGlite for drizzle and the store (`pglite: { instance }`).
describeTransactionContract(
  'drizzle on PGlite',
  () =>
    openDrizzlePgliteLibrary({
      dialect: 'pglite',
      schema: uniqueSchema('contract_drizzle'),
      create: true,
    }),
  { savepoints: true, sigkill: false },
);
