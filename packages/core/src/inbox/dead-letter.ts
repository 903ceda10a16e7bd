import type { Knex } from 'knex';
import type { DeadLetterReason } from '../dead-letters/types';
import { insertDeadLetter } from '../dead-letters/sql/insert-dead-letter';
import { findDeadLetter } from '../dead-letters/sql/find-dead-letter';
import { storableDiagnostic, textOf } from '../store/text';
import type { DeliveryFacts, Envelope } from '../transport/envelope';
import { AlreadyDeadLetteredError } from './errors/already-dead-lettered-error';
import { PayloadConflictError } from './errors/payload-conflict-error';
import type { BadDelivery, GoodDelivery } from './inspect-envelope';
import type { InboxRuntime } from './runtime';
import { markDead } from './sql/mark-dead';
import { keyOf } from './sql/message-key';
import { readRecords, type StoredRecord } from './sql/read-records';
import { takeAttempts, type TakenAttempts } from './sql/take-attempts';
import type { InboxOutcome } from './types';

type Settled = InboxOutcome<never>;

function errorCode(error: Error): string | null {
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' ? code : code === undefined ? null : textOf(code);
}

/**
 * The delivery facts worth keeping, each of its own type; a transport's (or a caller's)
 * anything-goes object never reaches the store's JSON column as given. @internal
 */
export function deliveryOf(value: unknown): DeliveryFacts {
  if (typeof value !== 'object' || value === null) return {};
  const d = value as Record<keyof DeliveryFacts, unknown>;
  const count = (n: unknown): number | undefined =>
    typeof n === 'number' && Number.isFinite(n) ? n : undefined;
  const text = (t: unknown): string | undefined =>
    typeof t === 'string' ? storableDiagnostic(t) : undefined;
  const facts: Record<string, unknown> = {
    attempt: count(d.attempt),
    receiveCount: count(d.receiveCount),
    redelivered: typeof d.redelivered === 'boolean' ? d.redelivered : undefined,
    source: text(d.source),
    partition: count(d.partition),
    offset: text(d.offset),
    receivedAt:
      d.receivedAt instanceof Date && !Number.isNaN(d.receivedAt.getTime())
        ? d.receivedAt
        : undefined,
  };
  for (const name of Object.keys(facts)) if (facts[name] === undefined) delete facts[name];
  return facts as DeliveryFacts;
}

function keyOfEnvelope(envelope: Envelope): string | null {
  return typeof envelope.key === 'string' ? envelope.key : null;
}

/**
 * Dead-letters bad input that has no usable id or scope: one autocommit insert of a fresh
 * letter (there is no key to deduplicate it on). @internal
 */
export async function deadLetterBadInput(rt: InboxRuntime, bad: BadDelivery): Promise<Settled> {
  const { store, consumer } = rt.options;
  const id = await insertDeadLetter(store.knex, store.names, {
    scope: bad.scope,
    consumer,
    messageId: bad.rawId,
    dedupe: false,
    fingerprint: bad.fingerprint,
    reason: bad.reason,
    errorCode: bad.error.code,
    errorMessage: bad.error.message,
    attempts: 0,
    key: keyOfEnvelope(bad.envelope),
    headers: bad.headers,
    body: bad.body,
    bodyIsText: bad.bodyIsText,
    exactBody: bad.inexactBody,
    delivery: deliveryOf(bad.envelope.delivery),
    firstAttemptAt: null,
  });
  return {
    status: 'dead-lettered',
    messageId: bad.rawId ?? undefined,
    scope: bad.scope,
    attempt: 0,
    reason: bad.reason,
    error: bad.error,
    deadLetterId: id,
  };
}

/**
 * What to do with a message whose dedup record already exists (seen inside the transaction
 * that tried to insert it, after waiting on the unique index; `known` when the caller read
 * it already): the same payload handled →
 * duplicate; the same payload dead-lettered → dead-lettered again (letter deleted →
 * duplicate); another payload → a payload-conflict letter, written in `trx`. @internal
 */
export async function settleExisting(
  rt: InboxRuntime,
  trx: Knex.Transaction,
  good: GoodDelivery,
  attempt: number,
  taken?: TakenAttempts,
  known?: StoredRecord,
): Promise<Settled> {
  const { store, consumer } = rt.options;
  const record = known ?? (await readRecords(trx, store.names, consumer, [good])).get(keyOf(good));
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
    return writeLetter(rt, trx, good, 'PAYLOAD_CONFLICT', conflict, attempt, taken);
  }
  if (record.status === 'SUCCEEDED') return { status: 'duplicate', ...base };
  const letter = await findDeadLetter(trx, store.names, {
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
  };
}

async function writeLetter(
  rt: InboxRuntime,
  trx: Knex.Transaction,
  good: GoodDelivery,
  reason: DeadLetterReason,
  error: Error,
  attempt: number,
  taken: TakenAttempts | undefined,
): Promise<Settled> {
  const { store, consumer } = rt.options;
  const id = await insertDeadLetter(trx, store.names, {
    scope: good.scope,
    consumer,
    messageId: good.messageId,
    dedupe: true,
    fingerprint: good.fingerprint,
    reason,
    errorCode: errorCode(error),
    errorMessage: error.message,
    attempts: attempt,
    key: keyOfEnvelope(good.envelope),
    headers: good.headers,
    body: good.body,
    bodyIsText: good.bodyIsText,
    exactBody: good.inexactBody,
    delivery: deliveryOf(good.envelope.delivery),
    firstAttemptAt: taken?.firstAttemptAt ?? null,
  });
  return {
    status: 'dead-lettered',
    messageId: good.messageId,
    scope: good.scope,
    attempt,
    reason,
    error,
    deadLetterId: id,
  };
}

/**
 * Dead-letters a message with a usable id, in one transaction: marks it FAILED_FINAL (so
 * redeliveries are acknowledged), removes its attempt counter, and writes the letter.
 * Idempotent: when the message already has a record, {@link settleExisting} decides
 * (already dead-lettered, in fact handled by another delivery, or a conflict). `makeError`
 * receives the removed attempt counter, for errors that report the last failure. @internal
 */
export async function deadLetterMessage(
  rt: InboxRuntime,
  good: GoodDelivery,
  reason: DeadLetterReason,
  attempt: number,
  makeError: (taken: TakenAttempts | undefined) => Error,
): Promise<Settled> {
  const { store, consumer, retentionMs } = rt.options;
  return store.knex.transaction(async (trx) => {
    const error = makeError(undefined);
    const marked = await markDead(trx, store.names, consumer, retentionMs, {
      scope: good.scope,
      messageId: good.messageId,
      fingerprint: good.fingerprint,
      attempt,
      reason,
      code: errorCode(error) ?? reason,
    });
    const taken = await takeAttempts(trx, store.names, consumer, good);
    if (!marked) return settleExisting(rt, trx, good, attempt, taken);
    return writeLetter(rt, trx, good, reason, taken ? makeError(taken) : error, attempt, taken);
  });
}
