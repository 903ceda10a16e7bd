import { countDelivery, needsCounting, settleByCount } from './count';
import { settleExisting } from './dedup';
import { prepare, type Prepared } from './prepare';
import type { InboxRuntime } from './runtime';
import { runHandler, settleTransactionFailure } from './run-handler';
import { claimMessage, toClaim } from './sql/claim-messages';
import type { CountedAttempt } from './sql/count-attempts';
import type { Envelope } from '../transport/envelope';
import type { Handler, InboxOutcome } from './types';

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
  const { store, consumer, retentionMs, transactions } = rt.options;

  let stored: CountedAttempt | undefined;
  const counting = needsCounting(rt, ordinal);
  if (counting) stored = await countDelivery(rt, good, ordinal);
  const { attempt, settled } = await settleByCount(rt, good, ordinal, stored);
  if (settled !== undefined) return report(rt, settled, body);

  let outcome: InboxOutcome<R>;
  try {
    outcome = await transactions.transaction(async (trx): Promise<InboxOutcome<R>> => {
      const tx = transactions.enter(trx);
      const claimed = await claimMessage(
        tx,
        store,
        consumer,
        retentionMs,
        toClaim(good, attempt),
        counting,
      );
      if (!claimed) return settleExisting(rt, tx, good, attempt);

      return runHandler(rt, trx, tx, { good, payload, attempt }, handler, signal);
    });
  } catch (error) {
    return report(rt, await settleTransactionFailure(rt, error, good, attempt, counting), body);
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
