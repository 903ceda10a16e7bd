import type { SqlTransaction } from '../../../transactions/types';

/** A name no handler's own savepoint is likely to have. */
const PROBE = 'justonce_probe';

/**
 * MySQL's probe of a handler's transaction after one of its statements failed. A failed
 * statement is undone alone there and the transaction goes on, so `select 1` would say
 * nothing; but a deadlock rolls the whole transaction back, and the statements after it then
 * run in autocommit, outside the dedup record's transaction: committing then would commit
 * nothing. A savepoint tells: set and released inside a transaction; outside one, its release
 * fails (ER_SP_DOES_NOT_EXIST), the statement before it having run in a transaction of its
 * own. (MariaDB's `@@in_transaction` would tell too; MySQL 8 has no such variable.) @internal
 */
export async function mysqlProbeTransaction(tx: SqlTransaction): Promise<void> {
  await tx.query(`savepoint ${PROBE}`, []);
  await tx.query(`release savepoint ${PROBE}`, []);
}
