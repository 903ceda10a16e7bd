import type { Knex } from 'knex';
import type { MigrationNames } from '../../store/migration';
import { rowsOf } from '../../store/migrate';
import { keyArrays, type MessageKey } from './message-key';

/**
 * Whether any of these messages has an attempt counter: an earlier delivery of it was counted
 * and has not finished (its handler failed, or the process died while it ran). Reads only;
 * one primary-key lookup per message. @internal
 */
export async function hasUnfinishedAttempts(
  db: Knex,
  names: MigrationNames,
  consumer: string,
  keys: readonly MessageKey[],
): Promise<boolean> {
  if (keys.length === 0) return false;
  const result = await db.raw(
    `select 1 as found
       from unnest(?::text[], ?::text[]) as m (scope, message_id)
       join ${names.table('inbox_attempts')} a
         on a.scope = m.scope and a.consumer = ? and a.message_id = m.message_id
      limit 1`,
    [...keyArrays(keys), consumer],
  );
  return rowsOf(result).length > 0;
}
