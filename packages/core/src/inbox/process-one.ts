import { attemptNumber, countDelivery, needsCounting, settleExhausted } from './count';
import { handlerContext } from './context';
import { settleExisting, settleHandled } from './dedup';
import { AbortedTransactionError } from './errors/aborted-transaction-error';
import { isInfrastructureFailure, storeOutage } from './outage';
import { prepare, type Prepared } from './prepare';
import { asError } from '../common/errors';
import type { InboxRuntime } from './runtime';
import { settleFailure } from './settle-failure';
import { claimMessage } from './sql/claim-messages';
import type { CountedAttempt } from './sql/count-attempts';
import type { Envelope } from '../transport/envelope';
import type { SqlTransaction } from '../transactions/types';
import type { Handler, InboxOutcome } from './types';

/** Marks an error as the handler's own, as opposed to the inbox's or the database's. */
class HandlerFailure {
  constructor(readonly error: Error) {}
}

/**
 * After a handler returned normally: if one of its statements failed, PostgreSQL has aborted
 * the transaction (unless a savepoint recovered it) and COMMIT would quietly roll back. The
 * driver's transaction state tells, where it tracks one; otherwise one probe statement.
 * @internal
 */
export async function assertUsable(tx: SqlTransaction): Promise<void> {
  const state = tx.state();
  if (state === 'active') return;
  if (state === 'failed' || state === 'idle') {
    throw new AbortedTransactionError(
      new Error(state === 'idle' ? 'the handler ended the transaction' : 'a statement failed'),
    );
  }
  try {
    await tx.query('select 1', []);
  } catch (error) {
    throw new AbortedTransactionError(error);
  }
}

/**
 * Handles one delivery: validate, count the attempt (autocommit), then in one transaction
 * insert the dedup record and run the handler; commit; report. @internal
 */
export async function processOne<R>(
  rt: InboxRuntime,
  envelope: Envelope,
  handler: Handler<R, unknown>,
  signal: AbortSignal,
): Promise<InboxOutcome<R>> {
  const prepared = await prepare(rt, envelope);
  if ('settled' in prepared) return report(rt, prepared.settled, envelope.body);
  return processPrepared(rt, prepared, envelope.body, handler, signal);
}

/**
 * {@link processOne} for a delivery already validated and decoded: count the attempt
 * (autocommit; a message whose record is committed is settled by that same statement's read
 * of it, whatever the count), then in one transaction insert the dedup record and run the
 * handler; commit; report. @internal
 */
export async function processPrepared<R>(
  rt: InboxRuntime,
  prepared: Prepared,
  body: unknown,
  handler: Handler<R, unknown>,
  signal: AbortSignal,
): Promise<InboxOutcome<R>> {
  const { good, payload, ordinal } = prepared;
  const { store, consumer, maxAttempts, retentionMs, transactions } = rt.options;

  let stored: CountedAttempt | undefined;
  const counting = needsCounting(rt, ordinal);
  if (counting) stored = await countDelivery(rt, good, ordinal);
  const attempt = attemptNumber(stored, ordinal);
  await rt.step('attempt-counted', good.messageId);
  if (stored?.handled !== undefined) {
    // Committed already: the record decides, before any count is judged.
    return report(rt, await settleHandled(rt, good, attempt, stored.handled), body);
  }
  if (attempt > maxAttempts) {
    return report(rt, await settleExhausted(rt, good, attempt, stored, ordinal), body);
  }

  let outcome: InboxOutcome<R>;
  try {
    outcome = await transactions.transaction(async (trx): Promise<InboxOutcome<R>> => {
      const tx = transactions.enter(trx);
      const claimed = await claimMessage(
        tx,
        store,
        consumer,
        retentionMs,
        {
          scope: good.scope,
          messageId: good.messageId,
          fingerprint: good.fingerprint,
          attempt,
        },
        counting,
      );
      if (!claimed) return settleExisting(rt, tx, good, attempt);

      const started = performance.now();
      let result: R;
      try {
        result = await handler(handlerContext(rt.options, trx, tx, good, payload, attempt, signal));
        await assertUsable(tx);
      } catch (error) {
        rt.instruments.handlerDuration((performance.now() - started) / 1000, false);
        throw new HandlerFailure(asError(error));
      }
      rt.instruments.handlerDuration((performance.now() - started) / 1000, true);
      await rt.step('handler-done', good.messageId);
      return { status: 'processed', messageId: good.messageId, scope: good.scope, attempt, result };
    });
  } catch (error) {
    if (!(error instanceof HandlerFailure)) {
      // The inbox's own statements or the commit failed: an outage is not the message's.
      if (isInfrastructureFailure(rt, error, false)) {
        throw await storeOutage(rt, error, counting ? [good] : []);
      }
      throw error;
    }
    return report(rt, await settleFailure(rt, good, attempt, error.error, counting), body);
  }
  return report(rt, outcome, body);
}

/**
 * Finishes a delivery: runs the `committed` step when a transaction that settled the message
 * (handled or dead-lettered) has committed, then counts and logs the outcome. @internal
 */
export async function report<R>(
  rt: InboxRuntime,
  outcome: InboxOutcome<R>,
  body: unknown,
): Promise<InboxOutcome<R>> {
  if (
    (outcome.status === 'processed' || outcome.status === 'dead-lettered') &&
    outcome.messageId !== undefined
  ) {
    await rt.step('committed', outcome.messageId);
  }
  rt.instruments.outcome(outcome, body);
  rt.activity.record(outcome);
  return outcome;
}
