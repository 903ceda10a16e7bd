import type { OperationRecord, OperationStatus, StoredOperationError } from '../types';

/** @internal Identifies one record. */
export interface RecordKey {
  readonly scope: string;
  readonly operation: string;
  readonly key: string;
}

/** @internal A millisecond count as an SQL interval; the binding is the count. */
export const MILLISECONDS = `(?::double precision * interval '1 millisecond')`;

/** @internal A row of the `idempotency` table as pg and PGlite return it. */
export interface IdempotencyRow {
  scope: string;
  operation: string;
  key: string;
  request_hash: string | null;
  status: OperationStatus;
  owner_id: string | null;
  lease_until: Date | string | null;
  /** The response's JSON text, exactly as stored (see {@link RECORD_COLUMNS}). */
  response: string | null;
  error: unknown;
  attempts: number | string;
  created_at: Date | string;
  updated_at: Date | string;
  expires_at: Date | string | null;
}

/**
 * @internal Columns selected for an {@link IdempotencyRow}. The `json` response is read as
 * its text and parsed here, like the first caller's copy, so a replay is the same JSON
 * whatever type parsers the application registered with its driver.
 */
export const RECORD_COLUMNS =
  'scope, operation, key, request_hash, status, owner_id, lease_until, response::text as response, error, attempts, created_at, updated_at, expires_at';

/** @internal The stored response of a row, parsed; `null` when there is none. */
export function parseResponse(text: string | null): unknown {
  if (text === null) return null;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    // Written by something else than this library; hand it over as it is.
    return text;
  }
}

/** @internal A timestamp column as a `Date`. */
export function toDate(value: Date | string): Date {
  return value instanceof Date ? value : new Date(value);
}

/** @internal A nullable timestamp column as a `Date` or `undefined`. */
export function toOptionalDate(value: Date | string | null | undefined): Date | undefined {
  return value === null || value === undefined ? undefined : toDate(value);
}

/** @internal The stored failure, tolerating rows written by other code. */
export function toStoredError(value: unknown): StoredOperationError | undefined {
  if (value === null || value === undefined) return undefined;
  const parsed = typeof value === 'string' ? safeParse(value) : value;
  if (parsed === null || typeof parsed !== 'object') {
    return { name: 'Error', message: String(parsed) };
  }
  const raw = parsed as Record<string, unknown>;
  const name = typeof raw.name === 'string' ? raw.name : 'Error';
  const message = typeof raw.message === 'string' ? raw.message : '';
  return typeof raw.code === 'string' ? { name, message, code: raw.code } : { name, message };
}

function safeParse(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/** @internal Maps a row to the public record shape. */
export function toRecord(row: IdempotencyRow): OperationRecord {
  return {
    scope: row.scope,
    operation: row.operation,
    key: row.key,
    requestHash: row.request_hash ?? undefined,
    status: row.status,
    ownerId: row.owner_id ?? undefined,
    leaseUntil: toOptionalDate(row.lease_until),
    // A SUCCEEDED record always has a response, `null` included.
    response: row.status === 'SUCCEEDED' ? parseResponse(row.response) : undefined,
    error: toStoredError(row.error),
    attempts: Number(row.attempts),
    createdAt: toDate(row.created_at),
    updatedAt: toDate(row.updated_at),
    expiresAt: toOptionalDate(row.expires_at),
  };
}
