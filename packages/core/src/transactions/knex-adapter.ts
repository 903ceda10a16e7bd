import type { Knex } from 'knex';
import { InvalidTransactionError } from './invalid-transaction-error';
import { isMysqlKnex } from './knex-dialect';
import { transactionQuery } from './sql';
import type { SqlTransaction, TransactionAdapter } from './types';

/** Transactions that saw a failed statement (knex reports each on `query-error`). */
const FAILED_STATEMENT = new WeakMap<Knex.Transaction, { failed: boolean }>();

function watch(trx: Knex.Transaction): { failed: boolean } {
  let seen = FAILED_STATEMENT.get(trx);
  if (seen === undefined) {
    const flag = { failed: false };
    trx.on('query-error', () => {
      flag.failed = true;
    });
    FAILED_STATEMENT.set(trx, flag);
    seen = flag;
  }
  return seen;
}

function isKnexTransaction(value: unknown): value is Knex.Transaction {
  return (
    typeof value === 'function' &&
    (value as { isTransaction?: unknown }).isTransaction === true &&
    typeof (value as { raw?: unknown }).raw === 'function'
  );
}

/** A knex transaction as a {@link SqlTransaction}. @internal */
export function enterKnex(trx: Knex.Transaction): SqlTransaction {
  if (!isKnexTransaction(trx)) {
    throw new InvalidTransactionError(
      'knex',
      'not-a-transaction',
      'expected a knex transaction (the argument of knex.transaction(async (trx) => …))',
    );
  }
  if (trx.isCompleted()) {
    throw new InvalidTransactionError('knex', 'finished', 'the transaction has already ended');
  }
  const seen = watch(trx);
  return {
    dialect: isMysqlKnex(trx) ? 'mysql' : 'postgres',
    query: async (text, values, options) => {
      try {
        return await transactionQuery(trx, text, values, options);
      } catch (error) {
        // knex reports its own statements on `query-error`; justonce's bypass knex.
        seen.failed = true;
        throw error;
      }
    },
    // A failed statement may have been recovered by a savepoint: only the server can tell.
    state: () => (seen.failed ? undefined : 'active'),
  };
}

/**
 * The adapter for knex transactions, the default when no other adapter is given: justonce
 * opens transactions with `knex.transaction`, and a handler receives knex's `trx`.
 */
export function knexTransactions(knex: Knex): TransactionAdapter<Knex.Transaction> {
  return {
    library: 'knex',
    transaction: <T>(work: (trx: Knex.Transaction) => Promise<T>) => knex.transaction(work),
    enter: enterKnex,
  };
}
