import type { DeadLetterReason } from '../dead-letters/types';
import { insertDeadLetter, type NewDeadLetter } from '../dead-letters/sql/insert-dead-letter';
import { isMysql } from '../store/dialect';
import { enterKnex } from '../transactions/knex-adapter';
import { knexRunner, poolRunner } from '../transactions/sql';
import { settleExisting } from './dedup';
import type { BadDelivery, GoodDelivery } from './inspect-envelope';
import type { InboxRuntime } from './runtime';
import { markDead } from './sql/mark-dead';
import { takeAttempts, type TakenAttempts } from './sql/take-attempts';
import type { InboxOutcome } from './types';
import { deliveryOf, errorCode, keyOfEnvelope, positionField, writeLetter } from './write-letter';

type Settled = InboxOutcome<never>;

/**
 * Dead-letters bad input that has no usable id or scope: one autocommit insert of a fresh
 * letter (there is no key to deduplicate it on). @internal
 */
export async function deadLetterBadInput(rt: InboxRuntime, bad: BadDelivery): Promise<Settled> {
  const { store, consumer } = rt.options;
  const delivery = deliveryOf(bad.envelope.delivery);
  const letter: NewDeadLetter = {
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
    delivery,
    firstAttemptAt: null,
  };
  // MySQL reads a fresh letter's id from its connection (`last_insert_id()`): one transaction.
  const id = isMysql(store)
    ? await store.knex.transaction((trx) => insertDeadLetter(knexRunner(trx), store.names, letter))
    : await insertDeadLetter(poolRunner(store.knex), store.names, letter);
  return {
    status: 'dead-lettered',
    messageId: bad.rawId ?? undefined,
    scope: bad.scope,
    attempt: 0,
    reason: bad.reason,
    error: bad.error,
    deadLetterId: id,
    ...positionField(delivery),
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
    const tx = enterKnex(trx);
    const error = makeError(undefined);
    const marked = await markDead(tx, store.names, consumer, retentionMs, {
      scope: good.scope,
      messageId: good.messageId,
      fingerprint: good.fingerprint,
      attempt,
      reason,
      code: errorCode(error) ?? reason,
    });
    const taken = await takeAttempts(tx, store.names, consumer, good);
    if (!marked) return settleExisting(rt, tx, good, attempt, taken);
    return writeLetter(rt, tx, good, reason, taken ? makeError(taken) : error, attempt, taken);
  });
}
