import { randomUUID } from 'node:crypto';
import { OperationConflictError } from './errors/operation-conflict-error';
import type { OperationsRuntime } from './runtime';
import { readRow } from './sql/read';
import { poolRunner } from '../transactions/sql';
import { parseResponse, toRecord, toStoredError, type RecordKey } from './sql/row';
import type { Reservation } from './types';

/**
 * How many times one reservation re-runs its upsert when the row changed between the upsert
 * and the read that explains it (finalized, expired or deleted in between).
 */
const MAX_RESERVE_ROUNDS = 5;

/**
 * Reserves `record` for a fresh owner id, or explains why not: the stored response, the
 * stored final failure, or another owner's live lease. A request hash other than the
 * stored one throws {@link OperationConflictError}. @internal
 */
export async function reserveRecord(
  rt: OperationsRuntime,
  record: RecordKey,
  hash: string,
  retentionMs: number,
): Promise<Reservation> {
  const { store, leaseMs, logger } = rt.options;
  let last: { ownerId: string | undefined; leaseUntil: Date | undefined; attempts: number } = {
    ownerId: undefined,
    leaseUntil: undefined,
    attempts: 0,
  };
  for (let round = 0; round < MAX_RESERVE_ROUNDS; round += 1) {
    const ownerId = randomUUID();
    const reserved = await rt.reserve.run({
      ...record,
      requestHash: hash,
      ownerId,
      leaseMs,
      retentionMs,
    });
    if (reserved !== undefined) {
      if (reserved.attempts > 1) {
        logger.info('operation re-reserved after a retriable failure or an expired lease', {
          ...record,
          ownerId,
          attempt: reserved.attempts,
        });
      }
      return {
        kind: 'acquired',
        ref: { ...record, ownerId, attempt: reserved.attempts, retentionMs },
        leaseUntil: reserved.leaseUntil,
        leaseRemainingMs: reserved.leaseUntil.getTime() - reserved.dbNow.getTime(),
      };
    }
    const current = await readRow(poolRunner(store.knex), store.names, record);
    // Gone or expired since the upsert looked: try again, it is absent now.
    if (current === undefined || current.expired) continue;
    const { row } = current;
    if (row.request_hash !== hash) {
      rt.count(record.operation, 'conflict');
      logger.warn('idempotency key reused with a different request', { ...record });
      throw new OperationConflictError(record.scope, record.operation, record.key);
    }
    const attempts = Number(row.attempts);
    if (row.status === 'SUCCEEDED') {
      return { kind: 'completed', response: parseResponse(row.response), attempts };
    }
    if (row.status === 'FAILED_FINAL') {
      return {
        kind: 'failed',
        failure: toStoredError(row.error) ?? { name: 'Error', message: 'unknown failure' },
        attempts,
      };
    }
    if (row.status === 'IN_PROGRESS' && current.leaseLive) {
      return {
        kind: 'in-progress',
        ownerId: row.owner_id ?? undefined,
        leaseUntil: toRecord(row).leaseUntil,
        attempts,
      };
    }
    // FAILED_RETRIABLE or a lapsed lease appeared after the upsert looked: go again.
    last = { ownerId: row.owner_id ?? undefined, leaseUntil: toRecord(row).leaseUntil, attempts };
  }
  // The row kept changing under us; report it as busy rather than loop forever.
  return { kind: 'in-progress', ...last };
}
