import type { Knex } from 'knex';
import { ConfigurationError } from '../errors/configuration-error';
import { rowsOf } from '../store/migrate';
import type { Store } from '../store/store';
import type { Envelope } from '../transport/envelope';
import { DeadLetterNotFoundError } from './errors/dead-letter-not-found-error';
import { LETTER_COLUMNS, toDeadLetter, type LetterRow } from './sql/row';
import type { DeadLetter, DeadLetters, ListDeadLettersOptions } from './types';

const DEFAULT_LIMIT = 100;
const MAX_LIMIT = 1000;
/** Letter ids are positive bigints; anything else cannot name a letter. */
const LETTER_ID = /^[1-9][0-9]{0,18}$/;

function checkLimit(limit: number | undefined): number {
  if (limit === undefined) return DEFAULT_LIMIT;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT) {
    throw new ConfigurationError(`limit must be an integer from 1 to ${MAX_LIMIT}`, { limit });
  }
  return limit;
}

function checkOptionalString(value: unknown, name: string): void {
  if (value !== undefined && typeof value !== 'string') {
    throw new ConfigurationError(`${name} must be a string`, { [name]: typeof value });
  }
}

/**
 * Opens the dead letters of a store (the inbox writes them; this reads and manages them).
 *
 * @example
 * ```ts
 * const deadLetters = createDeadLetters(store);
 * for (const letter of await deadLetters.list({ consumer: 'billing' })) {
 *   console.log(letter.id, letter.reason, letter.errorMessage);
 * }
 * const envelope = await deadLetters.requeue(id);
 * await inbox.process(envelope, handler); // or publish it again through the transport
 * ```
 */
export function createDeadLetters(store: Store): DeadLetters {
  if (typeof store !== 'object' || store === null || !store.knex || !store.names) {
    throw new ConfigurationError('createDeadLetters needs a store');
  }
  const { knex, names } = store;
  const letters = names.table('dead_letters');

  const get = async (id: string): Promise<DeadLetter | undefined> => {
    if (typeof id !== 'string' || !LETTER_ID.test(id)) return undefined;
    const result = await knex.raw(`select ${LETTER_COLUMNS} from ${letters} where id = ?`, [id]);
    const row = rowsOf<LetterRow>(result)[0];
    return row === undefined ? undefined : toDeadLetter(row);
  };

  return {
    async list(options: ListDeadLettersOptions = {}): Promise<DeadLetter[]> {
      const limit = checkLimit(options.limit);
      checkOptionalString(options.consumer, 'consumer');
      checkOptionalString(options.scope, 'scope');
      checkOptionalString(options.reason, 'reason');
      const where: string[] = [];
      const bindings: Knex.RawBinding[] = [];
      if (options.after !== undefined) {
        if (typeof options.after !== 'string' || !LETTER_ID.test(options.after)) {
          throw new ConfigurationError('after must be a dead letter id', { after: options.after });
        }
        where.push('id > ?');
        bindings.push(options.after);
      }
      if (options.consumer !== undefined) {
        where.push('consumer = ?');
        bindings.push(options.consumer);
      }
      if (options.scope !== undefined) {
        where.push('scope = ?');
        bindings.push(options.scope);
      }
      if (options.reason !== undefined) {
        where.push('reason = ?');
        bindings.push(options.reason);
      }
      if (options.includeRequeued === false) where.push('requeued_at is null');
      const result = await knex.raw(
        `select ${LETTER_COLUMNS} from ${letters}
          ${where.length > 0 ? `where ${where.join(' and ')}` : ''}
          order by ${letters}.id limit ?`,
        [...bindings, limit],
      );
      return rowsOf<LetterRow>(result).map(toDeadLetter);
    },

    get,

    async requeue(id: string): Promise<Envelope> {
      if (typeof id !== 'string' || !LETTER_ID.test(id))
        throw new DeadLetterNotFoundError(String(id));
      return knex.transaction(async (trx) => {
        const result = await trx.raw(
          `select ${LETTER_COLUMNS} from ${letters} where id = ? for update`,
          [id],
        );
        const row = rowsOf<LetterRow>(result)[0];
        if (row === undefined) throw new DeadLetterNotFoundError(id);
        if (row.dedupe && row.message_id !== null) {
          await trx.raw(
            `delete from ${names.table('idempotency')}
              where scope = ? and operation = ? and key = ? and status = 'FAILED_FINAL'
                and request_hash = ?`,
            [row.scope, row.consumer, row.message_id, row.fingerprint],
          );
          await trx.raw(
            `delete from ${names.table('inbox_attempts')}
              where scope = ? and consumer = ? and message_id = ?`,
            [row.scope, row.consumer, row.message_id],
          );
        }
        await trx.raw(`update ${letters} set requeued_at = now() where id = ?`, [id]);
        const letter = toDeadLetter(row);
        return {
          id: letter.messageId ?? undefined,
          scope: letter.scope,
          ...(letter.key === null ? {} : { key: letter.key }),
          headers: letter.headers,
          body: letter.body,
          delivery: letter.delivery.source === undefined ? {} : { source: letter.delivery.source },
        };
      });
    },

    async delete(id: string): Promise<boolean> {
      if (typeof id !== 'string' || !LETTER_ID.test(id)) return false;
      const result = await knex.raw(`delete from ${letters} where id = ? returning id`, [id]);
      return rowsOf(result).length > 0;
    },
  };
}
