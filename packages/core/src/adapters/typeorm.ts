import type { DataSource, EntityManager, QueryRunner } from 'typeorm';
import {
  InvalidTransactionError,
  type InvalidTransactionReason,
} from '../transactions/invalid-transaction-error';
import type {
  SqlResult,
  SqlTransaction,
  TransactionAdapter,
  TransactionState,
} from '../transactions/types';
import { hasPgStatus, pgClientState } from './pg-status';

/** Entity managers of transactions this adapter opened, and whether each has ended. */
const OPENED = new WeakMap<object, { ended: boolean }>();

/**
 * TypeORM's own marker for an entity manager, which holds across two copies of typeorm
 * (`instanceof` would not).
 */
function isEntityManager(value: unknown): value is EntityManager {
  return (
    typeof value === 'object' &&
    value !== null &&
    (value as { '@instanceof'?: unknown })['@instanceof'] === Symbol.for('EntityManager')
  );
}

/**
 * The server's status as the query runner's pg client last heard it, or `undefined` while a
 * reply is pending (a failed statement rejects before the status after it arrives). The
 * client is a protected field of TypeORM's PostgreSQL query runner: read defensively.
 */
function connectionState(runner: QueryRunner): TransactionState | undefined {
  try {
    const connection = (runner as unknown as { databaseConnection?: unknown }).databaseConnection;
    return hasPgStatus(connection) ? pgClientState(connection) : undefined;
  } catch {
    return undefined;
  }
}

const MESSAGES: Record<InvalidTransactionReason, string> = {
  'not-a-transaction':
    'expected the EntityManager of a transaction (the argument of dataSource.transaction(async (manager) => …))',
  'not-in-transaction': 'the entity manager has no query runner in a transaction',
  finished: 'the transaction has already ended',
  failed: 'a statement failed in the transaction',
};

/** Why `manager` cannot be written into, or `undefined` when its transaction is open. */
function refusal(manager: EntityManager): InvalidTransactionReason | undefined {
  try {
    if (!isEntityManager(manager)) return 'not-a-transaction';
    const runner = manager.queryRunner;
    if (OPENED.get(manager)?.ended === true || runner?.isReleased === true) return 'finished';
    if (runner === undefined || runner.isTransactionActive !== true) return 'not-in-transaction';
    const state = connectionState(runner);
    // An idle server under a runner that thinks it is in a transaction: it has ended.
    return state === 'failed' ? 'failed' : state === 'idle' ? 'finished' : undefined;
  } catch {
    return 'not-a-transaction';
  }
}

function enterTypeorm(manager: EntityManager): SqlTransaction {
  const reason = refusal(manager);
  if (reason !== undefined) throw new InvalidTransactionError('typeorm', reason, MESSAGES[reason]);
  const runner = manager.queryRunner as QueryRunner;
  return {
    dialect: 'postgres',
    async query(text: string, values: readonly unknown[]): Promise<SqlResult> {
      let result: { records: Record<string, unknown>[]; affected?: number };
      try {
        result = await runner.query(text, [...values], true);
      } catch (error) {
        // QueryFailedError carries the values (payloads): throw the driver's own error.
        const driverError = (error as { driverError?: unknown } | null)?.driverError;
        throw driverError instanceof Error ? driverError : error;
      }
      const rows = result.records ?? [];
      return { rows, rowCount: result.affected ?? rows.length };
    },
    state: () => (runner.isReleased ? 'idle' : connectionState(runner)),
  };
}

/**
 * The adapter for TypeORM on PostgreSQL: justonce opens transactions with
 * `dataSource.transaction`, and a handler receives the transaction's `EntityManager`. A
 * manager passed to `outbox.add` must have a query runner in a transaction.
 *
 * @example
 * ```ts
 * const dataSource = await new DataSource({ type: 'postgres', url, entities }).initialize();
 * const inbox = createInbox({ store, consumer: 'billing', transactions: typeormTransactions(dataSource) });
 * await inbox.process(envelope, async ({ trx }) => trx.getRepository(Bill).insert(bill));
 * ```
 */
export function typeormTransactions(dataSource: DataSource): TransactionAdapter<EntityManager> {
  return {
    library: 'typeorm',
    async transaction<T>(work: (manager: EntityManager) => Promise<T>): Promise<T> {
      let opened: { ended: boolean } | undefined;
      try {
        return await dataSource.transaction((manager) => {
          opened = { ended: false };
          OPENED.set(manager, opened);
          return work(manager);
        });
      } finally {
        if (opened !== undefined) opened.ended = true;
      }
    },
    enter: enterTypeorm,
  };
}
