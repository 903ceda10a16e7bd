import type { DeadLetterReason } from '@justonce/core';

/** Input the dashboard refuses: shown to the operator with status 400. */
export class BadInputError extends Error {
  override readonly name = 'BadInputError';
}

/** Every {@link DeadLetterReason}; the record type makes the compiler catch a new one. */
const REASONS: Record<DeadLetterReason, true> = {
  MISSING_MESSAGE_ID: true,
  INVALID_MESSAGE_ID: true,
  INVALID_SCOPE: true,
  INVALID_HEADERS: true,
  INVALID_BODY: true,
  UNDECODABLE_BODY: true,
  PAYLOAD_CONFLICT: true,
  MAX_ATTEMPTS: true,
  NON_RETRIABLE: true,
  INVALID_PAYLOAD: true,
  UNKNOWN_MESSAGE_TYPE: true,
  RETRY_BUDGET_SPENT: true,
};

/** The reasons, for the filter's select. */
export const DEAD_LETTER_REASONS = Object.keys(REASONS) as DeadLetterReason[];

/** A row id (decimal, as the store gives it), or a {@link BadInputError}. */
export function parseId(value: unknown, what = 'id'): string {
  if (typeof value !== 'string' || !/^[1-9]\d{0,18}$/.test(value)) {
    throw new BadInputError(`${what} must be a positive decimal number`);
  }
  return value;
}

/** An optional free-text filter: trimmed, at most 255 characters, `undefined` when empty. */
export function parseText(value: unknown, what: string): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') throw new BadInputError(`${what} must be text`);
  const text = value.trim();
  if (text === '') return undefined;
  if (text.length > 255) throw new BadInputError(`${what} is longer than 255 characters`);
  return text;
}

export function parseReason(value: unknown): DeadLetterReason | undefined {
  const text = parseText(value, 'reason');
  if (text === undefined) return undefined;
  if (!(text in REASONS))
    throw new BadInputError(`reason must be one of ${DEAD_LETTER_REASONS.join(', ')}`);
  return text as DeadLetterReason;
}

/**
 * An optional time: ISO 8601, or a `datetime-local` value (no zone: read as UTC, as the
 * pages show every time in UTC).
 */
export function parseTime(value: unknown, what: string): Date | undefined {
  const text = parseText(value, what);
  if (text === undefined) return undefined;
  const zoned = /(?:Z|[+-]\d{2}:?\d{2})$/i.test(text) || !text.includes('T') ? text : `${text}Z`;
  const at = /^\d{4}-\d{2}-\d{2}/.test(text) ? new Date(zoned) : new Date(Number.NaN);
  if (Number.isNaN(at.getTime())) {
    throw new BadInputError(`${what} must be a date and time such as 2026-01-31T08:00Z`);
  }
  return at;
}

/** The `id` fields of a bulk form: at least one, at most 1000, each a row id. */
export function parseIds(value: unknown): string[] {
  const values = value === undefined ? [] : Array.isArray(value) ? value : [value];
  if (values.length === 0) throw new BadInputError('select at least one row');
  if (values.length > 1000) throw new BadInputError('select at most 1000 rows at a time');
  return [...new Set(values.map((v) => parseId(v)))];
}
