import type { Knex } from 'knex';
import { isMysqlResult } from '../../../transactions/mysql-result';

/**
 * @internal
 * MySQL's outbox insert of `redeliverDeadLetter`, in the same transaction: the row of the same
 * message id deleted first, then the new pending row, whose id is the insert's
 * `LAST_INSERT_ID` (MySQL has no `INSERT … RETURNING`). MySQL has no `NOTIFY`: a running relay
 * finds the row when it next polls.
 */
export async function mysqlInsertIntoOutbox(
  trx: Knex.Transaction,
  outbox: string,
  row: {
    readonly destination: string;
    readonly key: string | null;
    readonly messageId: string;
    readonly headersJson: string;
    readonly payload: Buffer;
  },
): Promise<string> {
  await trx.raw(`delete from ${outbox} where message_id = ?`, [row.messageId]);
  const result: unknown = await trx.raw(
    `insert into ${outbox} (destination, partition_key, message_id, headers, payload)
     values (?, ?, ?, ?, ?)`,
    [row.destination, row.key, row.messageId, row.headersJson, row.payload],
  );
  const header = isMysqlResult(result) ? result[0] : undefined;
  const id = (header as { insertId?: number | string } | undefined)?.insertId;
  if (id === undefined) throw new Error('the outbox insert returned no row id');
  return String(id);
}
