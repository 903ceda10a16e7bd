import { uniqueSchema } from './db';
import { describeTransactionContract } from './transaction-contract';
import { openKnexLibrary } from './fixtures/transaction-contract-knex';

// The whole contract, the SIGKILL clause included, on MariaDB (docs/store.md, "MySQL and
// MariaDB"): knex is the one transaction adapter there. Clause (c) states MySQL's own rule: a
// failed statement undoes itself alone, so a handler that swallows it commits the rest.
describeTransactionContract(
  'knex on MySQL',
  () => openKnexLibrary({ dialect: 'mysql', schema: uniqueSchema('contract_my'), create: true }),
  { savepoints: true, sigkill: true, failedStatementUndoes: 'statement' },
);
