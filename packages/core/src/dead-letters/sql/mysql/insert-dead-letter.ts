import { runSql, type SqlRunner } from '../../../transactions/sql';
import type { MigrationNames } from '../../../store/migration';
import { rowsOf } from '../../../store/migrate';
import {
  storableOrNull,
  storedText,
  type NewDeadLetter,
  type StoredText,
} from '../insert-dead-letter';

/** The characters a letter's `scope` and `message_id` columns hold (see the schema). */
const ID_COLUMN_CHARS = 255;

function fits(text: string | null): boolean {
  return text === null || [...text].length <= ID_COLUMN_CHARS;
}

function cut(text: string | null): string | null {
  return fits(text) ? text : [...(text as string)].slice(0, ID_COLUMN_CHARS).join('');
}

/**
 * PostgreSQL's letter columns are `text`; MySQL's `scope` and `message_id` hold 255
 * characters, and bad input (an over-long id or scope) may be longer. Such a letter keeps a
 * cut form in those columns (strict mode would refuse the insert, and MariaDB would drop
 * trailing spaces past the width without a word) and its exact values in `raw`, as a letter
 * whose text PostgreSQL could not hold does.
 */
function fitted(letter: NewDeadLetter, text: StoredText): StoredText {
  if (fits(text.messageId) && fits(text.scope)) return text;
  const raw =
    text.raw ??
    JSON.stringify({
      messageId: letter.messageId,
      scope: letter.scope,
      key: letter.key,
      headers: text.headers,
      ...(letter.exactBody === undefined ? {} : { body: letter.exactBody }),
    });
  return { ...text, messageId: cut(text.messageId), scope: cut(text.scope) as string, raw };
}

/**
 * MySQL's `insertDeadLetter`. PostgreSQL's partial unique index (`where dedupe`) is a unique
 * key on a generated column here, null unless `dedupe` (see the schema), so a letter that does
 * not deduplicate never collides and one that does is re-armed by `on duplicate key update`
 * (PostgreSQL's `excluded` is `values()`). No `returning`: a deduplicated letter's id is read
 * by that unique key, from any connection (the caller's transaction sees its own row, and on
 * the pool the insert committed); a fresh letter's is the connection's `last_insert_id()`,
 * so that one must run in a transaction (one connection), never on the pool. @internal
 */
export async function mysqlInsertDeadLetter(
  db: SqlRunner,
  names: MigrationNames,
  letter: NewDeadLetter,
): Promise<string> {
  if (!letter.dedupe && db.pool === true) {
    throw new Error('a dead letter without dedupe needs a transaction on MySQL');
  }
  const table = names.table('dead_letters');
  const text = fitted(letter, storedText(letter));
  await runSql(
    db,
    `insert into ${table}
       (scope, consumer, message_id, dedupe, fingerprint, reason, error_code, error_message,
        attempts, partition_key, headers, body, body_is_text, delivery, first_attempt_at, raw)
     values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
     on duplicate key update
       reason = values(reason),
       error_code = values(error_code),
       error_message = values(error_message),
       attempts = values(attempts),
       headers = values(headers),
       raw = values(raw),
       delivery = values(delivery),
       first_attempt_at = coalesce(values(first_attempt_at), first_attempt_at),
       dead_at = current_timestamp(6),
       requeued_at = null`,
    [
      text.scope,
      letter.consumer,
      text.messageId,
      letter.dedupe,
      letter.fingerprint,
      letter.reason,
      storableOrNull(letter.errorCode),
      storableOrNull(letter.errorMessage),
      letter.attempts,
      text.key,
      JSON.stringify(text.headers),
      Buffer.from(letter.body.buffer, letter.body.byteOffset, letter.body.byteLength),
      letter.bodyIsText,
      JSON.stringify(letter.delivery),
      letter.firstAttemptAt,
      text.raw,
    ],
  );
  const result = letter.dedupe
    ? await runSql(
        db,
        `select cast(id as char) as id from ${table}
          where scope = ? and consumer = ? and message_id = ? and dedupe_fingerprint = ?`,
        [text.scope, letter.consumer, text.messageId, letter.fingerprint],
      )
    : await runSql(db, 'select cast(last_insert_id() as char) as id', []);
  const id = rowsOf<{ id: string }>(result)[0]?.id;
  if (id === undefined) throw new Error('dead letter insert returned no id');
  return id;
}
