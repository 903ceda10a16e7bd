import { effectContext } from './effect-context';
import { ledgerConflict } from './once/bind';
import { InvalidOperationInputError } from './errors/invalid-operation-input-error';
import { isLeaseLostError } from './errors/lease-lost-error';
import type { Acquired } from './execute';
import { finalize, serializeResponse } from './finalize';
import { TRANSACTIONAL_RUN_KEYS } from './input';
import { watchLease } from './lease-watch';
import { prepareCall } from './prepare-call';
import { recordEffectFailure, recordFailure } from './record-failure';
import { reserveOrReplay } from './reserve-or-replay';
import type { OperationsRuntime } from './runtime';
import type { TransactionalEffect, TransactionalRunOptions } from './types';
import { poolRunner, type SqlRunner } from '../transactions/sql';
import type { SqlTransaction } from '../transactions/types';

type StepHook = NonNullable<TransactionalRunOptions['onStep']>;

/**
 * Where an execution was when it failed, which decides what is recorded once the business
 * transaction has rolled back:
 * - `hook`: an `onStep` hook threw. Nothing is recorded, as if the process died there.
 * - `effect`: the effect threw. Recorded as `isRetriable` says, like `run`.
 * - `serialize`: the response cannot be stored. Recorded as a final failure, like `run`.
 * - `finalize`: writing SUCCEEDED failed. A lost lease records nothing (the record is
 *   another owner's); any other error is recorded as `isRetriable` says.
 * - `commit`: the commit failed. Recorded as `isRetriable` says; should the commit have gone
 *   through after all, the record is SUCCEEDED and the compare-and-set changes nothing.
 */
type Phase = 'hook' | 'effect' | 'serialize' | 'finalize' | 'commit';

/** Does nothing: the step hook of a call that passes none. */
const noStep: StepHook = () => undefined;

/**
 * `Operations.runInTransaction`: the same reservation, replay, conflict and waiting as
 * `run` (the reservation is its own short statement, so duplicates see IN_PROGRESS without
 * waiting on a lock), then the effect runs in a business transaction that also writes the
 * record's SUCCEEDED, so both commit together or not at all. @internal
 */
export async function runInTransaction<R>(
  rt: OperationsRuntime,
  key: string,
  request: unknown,
  effect: TransactionalEffect<R, unknown>,
  given?: TransactionalRunOptions,
): Promise<R> {
  const call = prepareCall<TransactionalRunOptions>(
    rt,
    'runInTransaction',
    TRANSACTIONAL_RUN_KEYS,
    { key, request, effect },
    given,
  );
  const { onStep } = call.options;
  if (onStep !== undefined && typeof onStep !== 'function') {
    throw new InvalidOperationInputError('onStep must be a function', { given: typeof onStep });
  }
  return reserveOrReplay(rt, call, (reservation) =>
    executeInTransaction(rt, reservation, effect, call.signal, onStep ?? noStep),
  );
}

/**
 * Runs the effect of an acquired reservation in a business transaction and writes SUCCEEDED
 * with the response in that transaction, by compare-and-set on the owner; a lost lease
 * throws {@link LeaseLostError} there, which rolls the business writes back. When anything
 * else fails, the transaction rolls back first and the failure is recorded after, in its
 * own statement (see {@link Phase}). The caller gets the failure itself, or the response as
 * stored (its JSON round trip, as a replay returns it).
 */
async function executeInTransaction<R>(
  rt: OperationsRuntime,
  reservation: Acquired,
  effect: TransactionalEffect<R, unknown>,
  callerSignal: AbortSignal | undefined,
  onStep: StepHook,
): Promise<R> {
  const { ref } = reservation;
  const { transactions } = rt.options;
  const watch = watchLease(ref, callerSignal, reservation.leaseRemainingMs);
  let phase: Phase = 'hook';
  let json: string;
  try {
    await onStep('reserved', ref);
    json = await transactions.transaction(async (trx) => {
      phase = 'effect';
      const tx = transactions.enter(trx);
      const ledger = ledgerConflict(rt, rt.options.store) ?? rt;
      const context = effectContext(rt, ref, watch, extendVia(rt, tx), ledger);
      const started = performance.now();
      let response: R;
      try {
        response = await effect(trx, context);
      } finally {
        rt.effectDuration(ref.operation, performance.now() - started);
        watch.stop();
      }
      phase = 'serialize';
      const stored = serializeResponse(rt, ref, response);
      phase = 'finalize';
      await finalize(rt, ref, { status: 'SUCCEEDED', responseJson: stored }, 'complete', tx);
      phase = 'hook';
      await onStep('effect-done', ref);
      phase = 'commit';
      return stored;
    });
  } catch (error) {
    watch.stop();
    await recordAfterRollback(rt, reservation, phase, error);
    throw error;
  }
  rt.count(ref.operation, 'executed');
  await onStep('committed', ref);
  return JSON.parse(json) as R;
}

/**
 * Where `ctx.extendLease` writes: through the store, a connection of its own, so that an
 * extension commits at once and holds no lock in the business transaction. PGlite has one
 * connection, which the transaction holds (nobody else can read the record meanwhile), so
 * there it goes through the transaction.
 */
function extendVia(rt: OperationsRuntime, tx: SqlTransaction): SqlRunner {
  const { store } = rt.options;
  return store.dialect === 'pglite' ? tx : poolRunner(store.knex);
}

/** Records the failure of an execution whose transaction rolled back, as {@link Phase} says. */
async function recordAfterRollback(
  rt: OperationsRuntime,
  { ref }: Acquired,
  phase: Phase,
  error: unknown,
): Promise<void> {
  switch (phase) {
    case 'hook':
      return;
    case 'effect':
      rt.count(ref.operation, 'effect_failed');
      await recordEffectFailure(rt, ref, error);
      return;
    case 'serialize':
      await recordFailure(rt, ref, error, false, 'an unstorable response');
      return;
    case 'finalize':
      if (isLeaseLostError(error)) return;
      await recordEffectFailure(rt, ref, error);
      return;
    case 'commit':
      await recordEffectFailure(rt, ref, error);
      return;
  }
}
