/**
 * The statements of `createDeadLetters` whose text is PostgreSQL's own, each taking the MySQL
 * branch first (their twins are in `mysql/letters.ts`).
 */
import type { Knex } from 'knex';
import { isMysql } from '../../store/dialect';
import { rowsOf } from '../../store/migrate';
import type { MigrationNames } from '../../store/migration';
import { LETTER_COLUMNS } from './row';
import {
  MYSQL_IDS_CLAUSE,
  MYSQL_LETTER_COLUMNS,
  mysqlDeleteLetter,
  mysqlIdsBinding,
  mysqlStampRequeued,
} from './mysql/letters';

/** The columns every dead-letter query selects, with the id as text. @internal */
export function letterColumns(names: MigrationNames): string {
  return isMysql(names) ? MYSQL_LETTER_COLUMNS : LETTER_COLUMNS;
}

/** The `list` filter by letter ids, with its one binding. @internal */
export function idsFilter(
  names: MigrationNames,
  ids: readonly string[],
): { clause: string; binding: Knex.RawBinding } {
  if (isMysql(names)) return { clause: MYSQL_IDS_CLAUSE, binding: mysqlIdsBinding(ids) };
  return { clause: 'id = any(?::bigint[])', binding: [...ids] };
}

/** Stamps a requeued letter. @internal */
export async function stampRequeued(
  trx: Knex.Transaction,
  names: MigrationNames,
  id: string,
): Promise<void> {
  const letters = names.table('dead_letters');
  if (isMysql(names)) return mysqlStampRequeued(trx, letters, id);
  await trx.raw(`update ${letters} set requeued_at = now() where id = ?`, [id]);
}

/** Deletes one letter; resolves to whether it existed. @internal */
export async function deleteLetter(
  knex: Knex,
  names: MigrationNames,
  id: string,
): Promise<boolean> {
  const letters = names.table('dead_letters');
  if (isMysql(names)) return mysqlDeleteLetter(knex, letters, id);
  const result = await knex.raw(`delete from ${letters} where id = ? returning id`, [id]);
  return rowsOf(result).length > 0;
}
