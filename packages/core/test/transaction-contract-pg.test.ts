import { uniqueSchema } from './db';
import { describeTransactionContract } from './transaction-contract';
import { openPgLibrary } from './fixtures/transaction-contract-pg';

describeTransactionContract(
  'pg on PostgreSQL',
  () => openPgLibrary({ dialect: 'postgres', schema: uniqueSchema('contract_pg'), create: true }),
  { savepoints: true, sigkill: true },
);
