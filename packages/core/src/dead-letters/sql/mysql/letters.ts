import type { Knex } from 'knex';
import { mysqlRowCount } from '../../../transactions/mysql-result';

/** MySQL's `LETTER_COLUMNS`: the id cast to text (mysql2 returns a bigint as text anyway). */
export const MYSQL_LETTER_COLUMNS = `cast(id as char) as id, scope, consumer, message_id, reason,
  error_code, error_message, attempts, partition_key, headers, body, body_is_text, delivery,
  fingerprint, first_attempt_at, dead_at, requeued_at, dedupe, raw`;

/**
 * MySQL's filter by letter ids: no arrays, so the ids as one JSON array binding read by
 * `json_table` (MariaDB 10.6+, MySQL 8), which keeps the clause at one binding. @internal
 */
export const MYSQL_IDS_CLAUSE = `id in (select j.id from json_table(?, '$[*]' columns (id bigint path '$')) j)`;

/** The ids' binding for {@link MYSQL_IDS_CLAUSE}. @internal */
export function mysqlIdsBinding(ids: readonly string[]): string {
  return JSON.stringify(ids);
}

/** MySQL's stamp of a requeued letter, by the database clock. @internal */
export async function mysqlStampRequeued(
  trx: Knex.Transaction,
  letters: string,
  id: string,
): Promise<void> {
  await trx.raw(`update ${letters} set requeued_at = current_timestamp(6) where id = ?`, [id]);
}

/** MySQL's delete of one letter: no `returning`, the affected rows say it existed. @internal */
export async function mysqlDeleteLetter(knex: Knex, letters: string, id: string): Promise<boolean> {
  return mysqlRowCount(await knex.raw(`delete from ${letters} where id = ?`, [id])) > 0;
}
