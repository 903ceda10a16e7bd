import type { DeliveryFacts } from '../../transport/envelope';
import type { DeadLetter, DeadLetterReason } from '../types';

/** The columns every dead-letter query selects, with the id as text. @internal */
export const LETTER_COLUMNS = `id::text as id, scope, consumer, message_id, reason, error_code,
  error_message, attempts, partition_key, headers, body, body_is_text, delivery, fingerprint,
  first_attempt_at, dead_at, requeued_at, dedupe, raw`;

/** A `dead_letters` row as pg, PGlite or mysql2 returns it. @internal */
export interface LetterRow {
  id: string;
  scope: string;
  consumer: string;
  message_id: string | null;
  reason: string;
  error_code: string | null;
  error_message: string | null;
  attempts: number;
  partition_key: string | null;
  headers: Record<string, string> | string;
  body: Uint8Array;
  /** MySQL returns its booleans as 0 or 1. */
  body_is_text: boolean | number;
  delivery: Record<string, unknown> | string;
  fingerprint: string;
  first_attempt_at: Date | string | null;
  dead_at: Date | string;
  requeued_at: Date | string | null;
  dedupe: boolean | number;
  /** JSON of the exact id, scope, key, headers (and body) when the columns hold escapes. */
  raw: string | null;
}

/** The exact values a letter was given, where its text columns could not hold them. */
interface ExactText {
  readonly messageId: string | null;
  readonly scope: string;
  readonly key: string | null;
  readonly headers: Record<string, string>;
  readonly body?: string;
}

function json<T>(value: T | string): T {
  return typeof value === 'string' ? (JSON.parse(value) as T) : value;
}

function date(value: Date | string): Date {
  return value instanceof Date ? value : new Date(value);
}

/** Delivery facts as stored in JSON, with `receivedAt` turned back into a `Date`. @internal */
export function reviveDelivery(stored: Record<string, unknown>): DeliveryFacts {
  const { receivedAt, ...rest } = stored;
  return typeof receivedAt === 'string'
    ? { ...(rest as DeliveryFacts), receivedAt: new Date(receivedAt) }
    : (rest as DeliveryFacts);
}

/** Converts a row to the public shape. @internal */
export function toDeadLetter(row: LetterRow): DeadLetter {
  const bytes = Buffer.from(row.body.buffer, row.body.byteOffset, row.body.byteLength);
  const exact: ExactText | null = row.raw === null ? null : (JSON.parse(row.raw) as ExactText);
  const text = exact ?? {
    messageId: row.message_id,
    scope: row.scope,
    key: row.partition_key,
    headers: json(row.headers),
  };
  return {
    id: row.id,
    scope: text.scope,
    consumer: row.consumer,
    messageId: text.messageId,
    reason: row.reason as DeadLetterReason,
    errorCode: row.error_code,
    errorMessage: row.error_message,
    attempts: Number(row.attempts),
    key: text.key,
    headers: text.headers,
    body: exact?.body ?? (row.body_is_text ? bytes.toString('utf8') : new Uint8Array(bytes)),
    delivery: reviveDelivery(json(row.delivery)),
    fingerprint: row.fingerprint,
    firstAttemptAt: row.first_attempt_at === null ? null : date(row.first_attempt_at),
    deadAt: date(row.dead_at),
    requeuedAt: row.requeued_at === null ? null : date(row.requeued_at),
  };
}
