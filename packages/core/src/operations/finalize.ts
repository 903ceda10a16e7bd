import { poolRunner, type SqlRunner } from '../transactions/sql';
import { InvalidOperationInputError } from './errors/invalid-operation-input-error';
import { LeaseLostError } from './errors/lease-lost-error';
import { ResponseTooLargeError } from './errors/response-too-large-error';
import { describeError } from './describe-error';
import type { OperationsRuntime } from './runtime';
import { extendLeaseRow } from './sql/extend-lease';
import { finalizeRow, type Final } from './sql/finalize';
import { readRow } from './sql/read';
import type { RecordKey } from './sql/row';
import type { OperationRef } from './types';
import { durationInput } from './validate';

/**
 * The response as the JSON text to store, refused with {@link InvalidOperationInputError}
 * when it cannot be serialized and {@link ResponseTooLargeError} when it is over
 * `maxResponseBytes`. @internal
 */
export function serializeResponse(
  rt: OperationsRuntime,
  record: RecordKey,
  response: unknown,
): string {
  let json: string | undefined;
  try {
    json = JSON.stringify(response === undefined ? null : response);
  } catch (error) {
    throw new InvalidOperationInputError(
      'the response cannot be serialized to JSON',
      { ...record },
      error,
    );
  }
  // A bare function or symbol serializes to undefined.
  if (json === undefined) json = 'null';
  const bytes = Buffer.byteLength(json, 'utf8');
  const { maxResponseBytes } = rt.options;
  if (bytes > maxResponseBytes) {
    throw new ResponseTooLargeError(record.operation, record.key, bytes, maxResponseBytes);
  }
  return json;
}

/**
 * The {@link LeaseLostError} for an owner whose compare-and-set matched nothing, naming who
 * holds the record now (best effort: a failed read leaves that out), read through `db`.
 * Counted and logged. @internal
 */
export async function leaseLost(
  rt: OperationsRuntime,
  ref: OperationRef,
  action: string,
  db: SqlRunner = poolRunner(rt.options.store.knex),
): Promise<LeaseLostError> {
  const { store, logger } = rt.options;
  const current = await readRow(db, store.names, ref).catch(() => undefined);
  rt.count(ref.operation, 'lease_lost');
  const error = new LeaseLostError(
    ref,
    { ownerId: current?.row.owner_id ?? undefined, status: current?.row.status },
    action,
  );
  logger.warn('owner lost its reservation', { ...error.details });
  return error;
}

/**
 * Writes the final state of a record `ref` still owns, through `db` (the store, or a
 * transaction that then commits it with its own writes); else throws {@link LeaseLostError}.
 * @internal
 */
export async function finalize(
  rt: OperationsRuntime,
  ref: OperationRef,
  final: Final,
  action: string,
  db?: SqlRunner,
): Promise<void> {
  const { store } = rt.options;
  // On the pool, a call groups with others made at the same time (`rt.finalize`).
  const matched =
    db === undefined
      ? await rt.finalize.run({ ...ref, final })
      : await finalizeRow(db, store, ref, ref.ownerId, final, ref.retentionMs);
  if (!matched) throw await leaseLost(rt, ref, action, db);
}

/**
 * Stores `response` as the outcome of `ref` and returns it as a duplicate will see it (its
 * JSON round trip). @internal
 */
export async function complete(
  rt: OperationsRuntime,
  ref: OperationRef,
  response: unknown,
): Promise<unknown> {
  const json = serializeResponse(rt, ref, response);
  await finalize(rt, ref, { status: 'SUCCEEDED', responseJson: json }, 'complete');
  return JSON.parse(json) as unknown;
}

/** Records the failure of `ref`: retriable (the next call runs again) or final. @internal */
export async function fail(
  rt: OperationsRuntime,
  ref: OperationRef,
  error: unknown,
  failOptions: { readonly retriable: boolean },
): Promise<void> {
  // Optional chaining because plain JavaScript callers may omit the options.
  const status = failOptions?.retriable === true ? 'FAILED_RETRIABLE' : 'FAILED_FINAL';
  await finalize(
    rt,
    ref,
    { status, errorJson: JSON.stringify(describeError(error)) },
    status === 'FAILED_RETRIABLE' ? 'fail (retriable)' : 'fail (final)',
  );
}

/**
 * Extends the lease `ref` holds by `ms` (default `leaseMs`) from now on the database clock,
 * through `db`; throws {@link LeaseLostError} when it no longer holds it. @internal
 */
export async function extendLease(
  rt: OperationsRuntime,
  ref: OperationRef,
  ms?: number,
  db: SqlRunner = poolRunner(rt.options.store.knex),
): Promise<{ leaseUntil: Date; dbNow: Date }> {
  const { store, leaseMs } = rt.options;
  const extendMs = durationInput(ms, 'ms', leaseMs, 1);
  const extended = await extendLeaseRow(db, store.names, ref, ref.ownerId, extendMs);
  if (extended === undefined) throw await leaseLost(rt, ref, 'extend the lease of', db);
  return extended;
}
