import type { Knex } from 'knex';
import { ConfigurationError } from '../errors/configuration-error';
import { knexTransactions } from './knex-adapter';
import type { TransactionAdapter } from './types';

const KNEX_ADAPTERS = new WeakMap<Knex, TransactionAdapter<Knex.Transaction>>();

/**
 * The `transactions` option of `createInbox`, `createOutbox` and `createOperations`: the
 * adapter given, checked for its shape, or knex transactions on the store's own knex. A
 * value of the wrong shape is a {@link ConfigurationError}. @internal
 */
export function transactionsOption(
  value: unknown,
  knex: Knex,
  factory: string,
): TransactionAdapter<unknown> {
  if (value === undefined) {
    let adapter = KNEX_ADAPTERS.get(knex);
    if (adapter === undefined) {
      adapter = knexTransactions(knex);
      KNEX_ADAPTERS.set(knex, adapter);
    }
    return adapter as TransactionAdapter<unknown>;
  }
  if (!isTransactionAdapter(value)) {
    throw new ConfigurationError(
      `${factory}: transactions must be a transaction adapter (knexTransactions, pgTransactions, kyselyTransactions, drizzleTransactions or typeormTransactions)`,
      { type: value === null ? 'null' : typeof value },
    );
  }
  return value;
}

/** True for a value with the shape of a {@link TransactionAdapter}, e.g. to check an option. */
export function isTransactionAdapter(value: unknown): value is TransactionAdapter<unknown> {
  const adapter = value as Partial<TransactionAdapter<unknown>> | null;
  return (
    typeof adapter === 'object' &&
    adapter !== null &&
    typeof adapter.library === 'string' &&
    typeof adapter.transaction === 'function' &&
    typeof adapter.enter === 'function'
  );
}
