import type { Knex } from 'knex';
import { dateOption, limitOption, rowId, stringOption } from '../config/arguments';
import { optionKeys, rejectUnknownOptions } from '../config/options';
import { ConfigurationError } from '../errors/configuration-error';
import { rowsOf } from '../store/migrate';
import type { MigrationNames } from '../store/migration';
import type { Store } from '../store/store';
import type { Envelope } from '../transport/envelope';
import { DeadLetterNotFoundError } from './errors/dead-letter-not-found-error';
import { toDeadLetter, type LetterRow } from './sql/row';
import { deleteLetter, idsFilter, letterColumns, stampRequeued } from './sql/letters';
import type { DeadLetter, DeadLetters, ListDeadLettersOptions } from './types';

/** Letter ids are positive bigints; anything else cannot name a letter. */
const LETTER_ID = /^[1-9][0-9]{0,18}$/;
/** Most ids one `list` call may name. */
const MAX_IDS = 1000;

/**
 * The `where` clauses of {@link DeadLetters.list}, every option checked first (a bad one is a
 * {@link ConfigurationError}, before any SQL).
 */
function listFilter(
  options: ListDeadLettersOptions,
  names: MigrationNames,
): {
  where: string[];
  bindings: Knex.RawBinding[];
  limit: number;
} {
  rejectUnknownOptions(options, LIST_KEYS, 'deadLetters.list');
  const limit = limitOption(options.limit);
  const where: string[] = [];
  const bindings: Knex.RawBinding[] = [];
  const add = (clause: string, value: Knex.RawBinding | undefined): void => {
    if (value === undefined) return;
    where.push(clause);
    bindings.push(value);
  };
  add('id > ?', options.after === undefined ? undefined : rowId(options.after, 'after'));
  add('consumer = ?', stringOption(options.consumer, 'consumer'));
  add('scope = ?', stringOption(options.scope, 'scope'));
  add('reason = ?', stringOption(options.reason, 'reason'));
  add('dead_at >= ?', dateOption(options.since, 'since'));
  add('dead_at < ?', dateOption(options.until, 'until'));
  if (options.ids !== undefined) {
    if (!Array.isArray(options.ids) || options.ids.length > MAX_IDS) {
      throw new ConfigurationError(`ids must be an array of at most ${MAX_IDS} letter ids`);
    }
    const ids = idsFilter(
      names,
      options.ids.map((id: unknown) => rowId(id, 'ids')),
    );
    add(ids.clause, ids.binding);
  }
  if (options.includeRequeued === false) where.push('requeued_at is null');
  return { where, bindings, limit };
}

/** The option names of {@link DeadLetters.list} (and of the admin's `select`). @internal */
export const LIST_KEYS = optionKeys<ListDeadLettersOptions>()([
  'consumer',
  'scope',
  'reason',
  'since',
  'until',
  'ids',
  'includeRequeued',
  'limit',
  'after',
]);

/** What {@link requeueLetter} did: the letter as it was, and the envelope to deliver again. */
export interface RequeuedLetter {
  readonly letter: DeadLetter;
  readonly envelope: Envelope;
}

/**
 * The body of `DeadLetters.requeue`, inside the caller's transaction `trx`, so that other
 * writes (the admin's outbox insert) commit with it or not at all: locks the letter, removes
 * the dead-letter marker and the attempt count of its message, stamps `requeued_at`. Throws
 * {@link DeadLetterNotFoundError} for an unknown id. @internal
 */
export async function requeueLetter(
  trx: Knex.Transaction,
  names: MigrationNames,
  id: string,
): Promise<RequeuedLetter> {
  if (typeof id !== 'string' || !LETTER_ID.test(id)) throw new DeadLetterNotFoundError(String(id));
  const letters = names.table('dead_letters');
  const result = await trx.raw(
    `select ${letterColumns(names)} from ${letters} where id = ? for update`,
    [id],
  );
  const row = rowsOf<LetterRow>(result)[0];
  if (row === undefined) throw new DeadLetterNotFoundError(id);
  if (row.dedupe && row.message_id !== null) {
    await trx.raw(
      `delete from ${names.table('inbox_records')}
        where consumer = ? and scope = ? and message_id = ? and status = 'FAILED_FINAL'
          and fingerprint = ?`,
      [row.consumer, row.scope, row.message_id, row.fingerprint],
    );
    await trx.raw(
      `delete from ${names.table('inbox_attempts')}
        where scope = ? and consumer = ? and message_id = ?`,
      [row.scope, row.consumer, row.message_id],
    );
  }
  await stampRequeued(trx, names, id);
  const letter = toDeadLetter(row);
  return {
    letter,
    envelope: {
      id: letter.messageId ?? undefined,
      scope: letter.scope,
      ...(letter.key === null ? {} : { key: letter.key }),
      headers: letter.headers,
      body: letter.body,
      delivery: letter.delivery.source === undefined ? {} : { source: letter.delivery.source },
    },
  };
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
    const result = await knex.raw(`select ${letterColumns(names)} from ${letters} where id = ?`, [
      id,
    ]);
    const row = rowsOf<LetterRow>(result)[0];
    return row === undefined ? undefined : toDeadLetter(row);
  };

  return {
    async list(options: ListDeadLettersOptions = {}): Promise<DeadLetter[]> {
      const { where, bindings, limit } = listFilter(options, names);
      const result = await knex.raw(
        `select ${letterColumns(names)} from ${letters}
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
      return knex.transaction(async (trx) => (await requeueLetter(trx, names, id)).envelope);
    },

    async delete(id: string): Promise<boolean> {
      if (typeof id !== 'string' || !LETTER_ID.test(id)) return false;
      return deleteLetter(knex, names, id);
    },
  };
}
