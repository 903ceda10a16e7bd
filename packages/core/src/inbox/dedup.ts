/**
 * Where a duplicate is decided. The inbox claims a message with one `insert … on conflict do
 * nothing` of its dedup record in the business transaction (`sql/claim-messages.ts`); a
 * claim that inserts nothing means the record exists (or another transaction was inserting it
 * and committed while this one waited on the unique index). {@link settleExisting} then says
 * what that record makes of this delivery: a duplicate, a message dead-lettered earlier, or
 * another payload under the same id (a conflict). A record already committed as handled is
 * also read by the attempt count, before any transaction: {@link settleHandled}.
 */
import { poolRunner, type SqlRunner } from '../transactions/sql';
import { findDeadLetter } from '../dead-letters/sql/find-dead-letter';
import { AlreadyDeadLetteredError } from './errors/already-dead-lettered-error';
import { PayloadConflictError } from './errors/payload-conflict-error';
import type { GoodDelivery } from './inspect-envelope';
import type { InboxRuntime } from './runtime';
import { keyOf } from './sql/message-key';
import { readRecords, type StoredRecord } from './sql/read-records';
import type { TakenAttempts } from './sql/take-attempts';
import type { InboxOutcome } from './types';
import { deliveryOf, positionField, writeLetter } from './write-letter';

type Settled = InboxOutcome<never>;

/**
 * Settles deliveries whose claim in `tx` found a dedup record, by their records read in one
 * statement ({@link settleExisting} for each); with `onlyRecorded`, a delivery that has no
 * record is left out. Returns the settled outcomes by delivery index. @internal
 */
export async function settleByRecords(
  rt: InboxRuntime,
  tx: SqlRunner,
  items: readonly {
    readonly index: number;
    readonly good: GoodDelivery;
    readonly attempt: number;
  }[],
  onlyRecorded = false,
): Promise<Map<number, Settled>> {
  const settled = new Map<number, Settled>();
  if (items.length === 0) return settled;
  const { store, consumer } = rt.options;
  const goods = items.map((item) => item.good);
  const records = await readRecords(tx, store.names, consumer, goods);
  for (const { index, good, attempt } of items) {
    const record = records.get(keyOf(good));
    if (record === undefined && onlyRecorded) continue;
    settled.set(index, await settleExisting(rt, tx, good, attempt, undefined, record));
  }
  return settled;
}

/**
 * What to do with a message whose dedup record already exists (seen inside the transaction
 * that tried to insert it, after waiting on the unique index; `known` when the caller read
 * it already): the same payload handled →
 * duplicate; the same payload dead-lettered → dead-lettered again (letter deleted →
 * duplicate); another payload → a payload-conflict letter, written in `tx`. @internal
 */
export async function settleExisting(
  rt: InboxRuntime,
  tx: SqlRunner,
  good: GoodDelivery,
  attempt: number,
  taken?: TakenAttempts,
  known?: StoredRecord,
): Promise<Settled> {
  const { store, consumer } = rt.options;
  const record = known ?? (await readRecords(tx, store.names, consumer, [good])).get(keyOf(good));
  const base = { messageId: good.messageId, scope: good.scope };
  if (record === undefined) {
    // The record vanished between the insert and the read (deleted by a requeue or by
    // retention at that very moment): nothing was done, so let the broker redeliver.
    return {
      status: 'failed',
      ...base,
      attempt,
      retriable: true,
      error: new Error('the dedup record changed while it was read; redeliver'),
      retryDelayMs: 0,
    };
  }
  const sameMessage =
    record.requestHash === good.fingerprint &&
    (record.status === 'SUCCEEDED' || record.status === 'FAILED_FINAL');
  if (!sameMessage) {
    const conflict = new PayloadConflictError({
      messageId: good.messageId,
      storedFingerprint: record.requestHash,
      fingerprint: good.fingerprint,
      storedStatus: record.status,
    });
    return writeLetter(rt, tx, good, 'PAYLOAD_CONFLICT', conflict, attempt, taken);
  }
  if (record.status === 'SUCCEEDED') return { status: 'duplicate', ...base };
  const letter = await findDeadLetter(tx, store.names, {
    scope: good.scope,
    consumer,
    messageId: good.messageId,
    fingerprint: good.fingerprint,
  });
  if (letter === undefined) return { status: 'duplicate', ...base };
  return {
    status: 'dead-lettered',
    ...base,
    attempt,
    reason: letter.reason,
    error: new AlreadyDeadLetteredError({
      messageId: good.messageId,
      deadLetterId: letter.id,
      reason: letter.reason,
    }),
    deadLetterId: letter.id,
    ...positionField(deliveryOf(good.envelope.delivery)),
  };
}

/**
 * What a committed `SUCCEEDED` record, read before any transaction opened (by the attempt
 * count), makes of a delivery, whatever its attempt number: the same payload → duplicate,
 * with no transaction and no write; another payload → a payload-conflict letter, one
 * autocommit insert. First-delivery arbitration is untouched: a message without a committed
 * record still goes through the claim in its business transaction. @internal
 */
export function settleHandled(
  rt: InboxRuntime,
  good: GoodDelivery,
  attempt: number,
  record: StoredRecord,
): Promise<Settled> {
  return settleExisting(rt, poolRunner(rt.options.store.knex), good, attempt, undefined, record);
}
