import type { Knex } from 'knex';
import type { MigrationNames } from '../../store/migration';
import { keyArrays, type MessageKey } from './message-key';
import { isMysql } from '../../store/dialect';
import { mysqlRefundAttempts } from './mysql/refund-attempts';

/**
 * Gives back the attempt each of these messages was charged for a delivery the store could
 * not handle (an outage is not the message's fault), in autocommit. @internal
 */
export async function refundAttempts(
  db: Knex,
  names: MigrationNames,
  consumer: string,
  keys: readonly MessageKey[],
): Promise<void> {
  if (isMysql(names)) return mysqlRefundAttempts(db, names, consumer, keys);
  if (keys.length === 0) return;
  await db.raw(
    `update ${names.table('inbox_attempts')} a
        set attempts = a.attempts - 1
       from unnest(?::text[], ?::text[]) as m (scope, message_id)
      where a.scope = m.scope and a.consumer = ? and a.message_id = m.message_id
        and a.attempts > 0`,
    [...keyArrays(keys), consumer],
  );
}
