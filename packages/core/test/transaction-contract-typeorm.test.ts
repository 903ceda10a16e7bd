import { uniqueSchema } from './db';
import { describeTransactionContract } from './transaction-contract';
import { openTypeormLibrary } from './fixtures/transaction-contract-typeorm';

describeTransactionContract(
  'typeorm on PostgreSQL',
  () =>
    openTypeormLibrary({
      dialect: 'postgres',
      schema: uniqueSchema('contract_typeorm'),
      create: true,
    }),
  { savepoints: true, sigkill: true },
);
