import { runSql, type SqlRunner } from '../../transactions/sql';
import type { MigrationNames } from '../../store/migration';
import { rowsOf } from '../../store/migrate';
import { isStorableText, jsonOf, storableDiagnostic } from '../../common/text';
import type { DeliveryFacts } from '../../transport/envelope';
import type { DeadLetterReason } from '../types';
import { isMysql } from '../../store/dialect';
import { mysqlInsertDeadLetter } from './mysql/insert-dead-letter';

/** Everything a dead letter stores. @internal */
export interface NewDeadLetter {
  readonly scope: string;
  readonly consumer: string;
  readonly messageId: string | null;
  /** Unique per (scope, consumer, message id, fingerprint) when true; a fresh row when false. */
  readonly dedupe: boolean;
  readonly fingerprint: string;
  readonly reason: DeadLetterReason;
  readonly errorCode: string | null;
  readonly errorMessage: string | null;
  readonly attempts: number;
  readonly key: string | null;
  readonly headers: Readonly<Record<string, unknown>>;
  readonly body: Uint8Array;
  readonly bodyIsText: boolean;
  /** The body string, when `body` (its UTF-8 bytes) would not give it back exactly. */
  readonly exactBody?: string | undefined;
  readonly delivery: DeliveryFacts;
  readonly firstAttemptAt: Date | null;
}

/**
 * Writes a dead letter and returns its id. A letter that already exists for the same
 * message and fingerprint is re-armed (new reason and error, `requeued_at` cleared) rather
 * than duplicated. @internal
 */
/** The text columns of a letter in storable form, and the exact values when they differ. */
export interface StoredText {
  readonly messageId: string | null;
  readonly scope: string;
  readonly key: string | null;
  readonly headers: Record<string, string>;
  /** JSON of the exact values, or `null` when the columns hold them as given. */
  readonly raw: string | null;
}

/** @internal */
export function storableOrNull(value: string | null): string | null {
  return value === null ? null : storableDiagnostic(value);
}

/**
 * Bad input must be kept as given, yet PostgreSQL text refuses U+0000 and the driver turns a
 * lone surrogate into U+FFFD. Such letters get an escaped form in their text columns (for
 * listing and filtering) and the exact values as JSON text in `raw`: `JSON.stringify` writes
 * both as `\u` escapes, which `JSON.parse` turns back into the same strings.
 * @internal
 */
export function storedText(letter: NewDeadLetter): StoredText {
  const given: unknown = letter.headers;
  // Headers as given, each value as text: a value that was not a string is kept as its JSON.
  const exactHeaders: Record<string, string> = {};
  const headers: Record<string, string> = {};
  let exact = letter.exactBody === undefined;
  if (typeof given === 'object' && given !== null) {
    for (const [name, value] of Object.entries(given)) {
      const text = typeof value === 'string' ? value : jsonOf(value);
      // defineProperty: a header named `__proto__` stays a header.
      Object.defineProperty(exactHeaders, name, { value: text, enumerable: true, writable: true });
      Object.defineProperty(headers, storableDiagnostic(name), {
        value: storableDiagnostic(text),
        enumerable: true,
        writable: true,
      });
      exact &&= typeof value === 'string' && isStorableText(name) && isStorableText(value);
    }
    exact &&= !Array.isArray(given);
  } else {
    exact &&= given === undefined || given === null;
  }
  for (const text of [letter.messageId, letter.scope, letter.key]) {
    exact &&= text === null || isStorableText(text);
  }
  return {
    messageId: storableOrNull(letter.messageId),
    scope: storableDiagnostic(letter.scope),
    key: storableOrNull(letter.key),
    headers,
    raw: exact
      ? null
      : JSON.stringify({
          messageId: letter.messageId,
          scope: letter.scope,
          key: letter.key,
          headers: exactHeaders,
          ...(letter.exactBody === undefined ? {} : { body: letter.exactBody }),
        }),
  };
}

export async function insertDeadLetter(
  db: SqlRunner,
  names: MigrationNames,
  letter: NewDeadLetter,
): Promise<string> {
  if (isMysql(names)) return mysqlInsertDeadLetter(db, names, letter);
  const text = storedText(letter);
  const result = await runSql(
    db,
    `insert into ${names.table('dead_letters')} as d
       (scope, consumer, message_id, dedupe, fingerprint, reason, error_code, error_message,
        attempts, partition_key, headers, body, body_is_text, delivery, first_attempt_at, raw)
     values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?::jsonb, ?, ?, ?::jsonb, ?, ?)
     on conflict (scope, consumer, message_id, fingerprint) where dedupe do update set
       reason = excluded.reason,
       error_code = excluded.error_code,
       error_message = excluded.error_message,
       attempts = excluded.attempts,
       headers = excluded.headers,
       raw = excluded.raw,
       delivery = excluded.delivery,
       first_attempt_at = coalesce(excluded.first_attempt_at, d.first_attempt_at),
       dead_at = now(),
       requeued_at = null
     returning id::text as id`,
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
  const id = rowsOf<{ id: string }>(result)[0]?.id;
  if (id === undefined) throw new Error('dead letter insert returned no id');
  return id;
}
