/**
 * The handler's run in the transaction of its delivery, one home for both dedup paths (`ids`
 * in process-one.ts, the watermark modes in watermark/process.ts): the run with its timing,
 * the check that the transaction is still usable, and what a failed transaction leads to.
 */
import { crashPoint } from '../common/crash-points';
import { asError } from '../common/errors';
import type { SqlTransaction } from '../transactions/types';
import { handlerContext } from './context';
import { AbortedTransactionError } from './errors/aborted-transaction-error';
import type { GoodDelivery } from './inspect-envelope';
import { isInfrastructureFailure, storeOutage } from './outage';
import type { InboxRuntime } from './runtime';
import { settleFailure } from './settle-failure';
import { inMessageContext } from './trace-process';
import { isMysql } from '../store/dialect';
import { mysqlProbeTransaction } from './sql/mysql/run-handler';
import type { Handler, InboxOutcome } from './types';

/** Marks an error as the handler's own, as opposed to the inbox's or the database's. */
class HandlerFailure {
  constructor(readonly error: Error) {}
}

/**
 * After a handler returned normally: if one of its statements failed, PostgreSQL has aborted
 * the transaction (unless a savepoint recovered it) and COMMIT would quietly roll back. The
 * driver's transaction state tells, where it tracks one; otherwise one probe statement (on
 * MySQL, `mysql`, one that tells whether a deadlock ended the transaction).
 * @internal
 */
export async function assertUsable(tx: SqlTransaction, mysql = false): Promise<void> {
  const state = tx.state();
  if (state === 'active') return;
  if (state === 'failed' || state === 'idle') {
    throw new AbortedTransactionError(
      new Error(state === 'idle' ? 'the handler ended the transaction' : 'a statement failed'),
    );
  }
  try {
    await probeTransaction(tx, mysql);
  } catch (error) {
    throw new AbortedTransactionError(error);
  }
}

/** One statement that fails when the transaction can no longer commit what it did. */
async function probeTransaction(tx: SqlTransaction, mysql: boolean): Promise<void> {
  if (mysql) return mysqlProbeTransaction(tx);
  await tx.query('select 1', []);
}

/**
 * Runs the handler of one delivery as the last step of its own transaction and returns its
 * `processed` outcome. A failure of the handler is thrown marked as its own, so that
 * {@link settleTransactionFailure} tells it from the inbox's. @internal
 */
export async function runHandler<R>(
  rt: InboxRuntime,
  trx: unknown,
  tx: SqlTransaction,
  run: { readonly good: GoodDelivery; readonly payload: unknown; readonly attempt: number },
  handler: Handler<R, unknown>,
  signal: AbortSignal,
): Promise<InboxOutcome<R>> {
  const { good, payload, attempt } = run;
  const started = performance.now();
  let result: R;
  try {
    crashPoint('inbox.before-handler');
    result = await inMessageContext(good.envelope, () =>
      handler(handlerContext(rt.options, trx, tx, good, payload, attempt, signal)),
    );
    await assertUsable(tx, isMysql(rt.options.store));
  } catch (error) {
    rt.instruments.handlerDuration((performance.now() - started) / 1000, false);
    throw new HandlerFailure(asError(error));
  }
  rt.instruments.handlerDuration((performance.now() - started) / 1000, true);
  await rt.step('handler-done', good.messageId);
  crashPoint('inbox.after-handler');
  return { status: 'processed', messageId: good.messageId, scope: good.scope, attempt, result };
}

/**
 * What the failed transaction of one delivery leads to: its handler's failure is settled
 * (retry or dead letter); an outage of the inbox's own statements or of the commit is not
 * the message's and is thrown as one (charging the delivery's attempt back when it
 * `counted` it); anything else is thrown as it is. @internal
 */
export async function settleTransactionFailure(
  rt: InboxRuntime,
  error: unknown,
  good: GoodDelivery,
  attempt: number,
  counted: boolean,
): Promise<InboxOutcome<never>> {
  if (!(error instanceof HandlerFailure)) {
    if (isInfrastructureFailure(rt, error, false)) {
      throw await storeOutage(rt, error, counted ? [good] : []);
    }
    throw error;
  }
  return settleFailure(rt, good, attempt, error.error, counted);
}
