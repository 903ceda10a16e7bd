export type {
  KnexTransaction,
  SqlDialect,
  SqlQueryOptions,
  SqlResult,
  SqlTransaction,
  TransactionAdapter,
  TransactionState,
} from './types';
export {
  InvalidTransactionError,
  type InvalidTransactionReason,
} from './invalid-transaction-error';
export { knexTransactions } from './knex-adapter';
export { isTransactionAdapter } from './option';
