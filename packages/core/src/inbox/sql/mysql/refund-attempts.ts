import type { Knex } from 'knex';
import type { MigrationNames } from '../../../store/migration';
import type { MessageKey } from '../message-key';
import { keyPairs } from './message-key';

/** MySQL's `refundAttempts`: one update of the listed counters. @internal */
export async function mysqlRefundAttempts(
  db: Knex,
  names: MigrationNames,
  consumer: string,
  keys: readonly MessageKey[],
): Promise<void> {
  if (keys.length === 0) return;
  const pairs = keyPairs(keys);
  await db.raw(
    `update ${names.table('inbox_attempts')}
        set attempts = attempts - 1
      where consumer = ? and (scope, message_id) in (${pairs.sql}) and attempts > 0`,
    [consumer, ...pairs.bindings],
  );
}
