/**
 * The passes of a chunk's transaction, one home for both dedup paths (`ids` in
 * process-batch.ts, the watermark modes in watermark/together.ts): a first pass runs every
 * handler straight in the transaction; if one fails, that pass rolls back and the chunk runs
 * again with each handler in its own savepoint, so a failing message's work is undone and
 * the others commit once.
 */
import { crashPoint } from '../common/crash-points';
import { asError } from '../common/errors';
import type { SqlTransaction } from '../transactions/types';
import { handlerContext } from './context';
import type { GoodDelivery } from './inspect-envelope';
import { isInfrastructureFailure, storeOutage } from './outage';
import { assertUsable } from './run-handler';
import { inMessageContext } from './trace-process';
import { isMysql } from '../store/dialect';
import type { InboxRuntime } from './runtime';
import { settleFailure } from './settle-failure';
import type { Handler, InboxOutcome } from './types';

/** What a delivery's turn in a chunk's transaction came to. @internal */
export type RunResult<R> =
  | { readonly kind: 'processed'; readonly result: R }
  | { readonly kind: 'settled'; readonly outcome: InboxOutcome<never> }
  | { readonly kind: 'failed'; readonly error: Error };

/** A delivery of a chunk's transaction, with its attempt. @internal */
export interface BatchItem {
  readonly good: GoodDelivery;
  readonly attempt: number;
  /** Its attempt was counted durably: its counter is cleared with its transaction. */
  readonly counted: boolean;
}

/** What every handler of a pass is run with. @internal */
export interface PassRun<R> {
  readonly handler: Handler<R, unknown>;
  readonly signal: AbortSignal;
  /** Each handler in its own savepoint (the isolated pass), or straight in the transaction. */
  readonly isolate: boolean;
}

/** The savepoint around each handler of an isolated pass. */
const SAVEPOINT = 'justonce_handler';

/** MySQL's deadlock (ER_LOCK_DEADLOCK, errno 1213): the server rolled the transaction back. */
function isDeadlock(error: unknown): boolean {
  const { code, errno } = (error ?? {}) as { code?: unknown; errno?: unknown };
  return code === 'ER_LOCK_DEADLOCK' || errno === 1213;
}

/** Thrown inside the optimistic pass to roll it back and run the batch again isolated. */
class IsolateAndRetry {}

/**
 * Runs a chunk's transaction: `pass(false)` first (or `pass(true)` straight away when
 * `isolated`), and `pass(true)` again when a handler of the first failed. The inbox's own
 * statements or the commit failing is an outage, not the messages': it is thrown as one,
 * giving back the attempts of the `counted` items. @internal
 */
export async function runPasses<T>(
  rt: InboxRuntime,
  items: readonly BatchItem[],
  isolated: boolean,
  pass: (isolate: boolean) => Promise<T>,
): Promise<T> {
  try {
    try {
      return await pass(isolated);
    } catch (error) {
      if (!(error instanceof IsolateAndRetry)) throw error;
      return await pass(true);
    }
  } catch (error) {
    if (!isInfrastructureFailure(rt, error, false)) throw error;
    const charged = items.filter((i) => i.counted).map((i) => i.good);
    throw await storeOutage(rt, error, charged);
  }
}

/**
 * Runs one handler of a chunk's pass: straight in the transaction (a failure rolls the pass
 * back for an isolated one), or in its own savepoint. @internal
 */
export async function runInPass<R>(
  rt: InboxRuntime,
  trx: unknown,
  tx: SqlTransaction,
  item: BatchItem & { readonly payload: unknown },
  { handler, signal, isolate }: PassRun<R>,
): Promise<RunResult<R>> {
  const started = performance.now();
  const { good, payload, attempt } = item;
  const context = handlerContext(rt.options, trx, tx, good, payload, attempt, signal);
  // A savepoint in SQL rather than the library's nested transaction, so that it works the
  // same through every adapter; the handler writes through the one transaction object it knows.
  if (isolate) await tx.query(`savepoint ${SAVEPOINT}`, []);
  try {
    crashPoint('inbox.before-handler');
    const result = await inMessageContext(good.envelope, () => handler(context));
    await assertUsable(tx, isMysql(rt.options.store));
    if (isolate) await tx.query(`release savepoint ${SAVEPOINT}`, []);
    rt.instruments.handlerDuration((performance.now() - started) / 1000, true);
    return { kind: 'processed', result };
  } catch (error) {
    rt.instruments.handlerDuration((performance.now() - started) / 1000, false);
    if (!isolate) throw new IsolateAndRetry();
    // On MySQL a deadlock rolls the whole transaction back, its savepoints with it (PostgreSQL
    // aborts only the savepoint's part): the chunk's other work is gone too, so the chunk
    // fails as a collision of its transaction, not as this message's failure.
    if (isMysql(rt.options.store) && isDeadlock(error)) throw error;
    await tx.query(`rollback to savepoint ${SAVEPOINT}`, []);
    await tx.query(`release savepoint ${SAVEPOINT}`, []);
    return { kind: 'failed', error: asError(error) };
  }
}

/**
 * The outcome of a delivery once its chunk's transaction committed: processed, settled in
 * the transaction, or failed (then settled as a retry or a dead letter). @internal
 */
export async function passOutcome<R>(
  rt: InboxRuntime,
  item: BatchItem,
  result: RunResult<R> | undefined,
): Promise<InboxOutcome<R>> {
  if (result === undefined) throw new Error('batch lost a message result');
  const base = { messageId: item.good.messageId, scope: item.good.scope };
  if (result.kind === 'processed') {
    return { status: 'processed', ...base, attempt: item.attempt, result: result.result };
  }
  if (result.kind === 'settled') return result.outcome;
  return settleFailure(rt, item.good, item.attempt, result.error, item.counted);
}
