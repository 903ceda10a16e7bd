import type { Knex } from 'knex';
import type { TransactionAdapter } from '../transactions/types';
import { callOptions, GET_KEYS, refInput, RESERVE_KEYS } from './input';
import { complete, extendLease, fail } from './finalize';
import { resolveOperationsOptions } from './options';
import { requestHash } from './request-hash';
import { reserveRecord } from './reserve';
import { run } from './run';
import { runInTransaction } from './run-in-transaction';
import {
  createOperationsRuntime,
  registerOperationsRuntime,
  type OperationsRuntime,
} from './runtime';
import { readRow } from './sql/read';
import { poolRunner } from '../transactions/sql';
import { toRecord } from './sql/row';
import { target } from './target';
import type {
  OperationRecord,
  Operations,
  OperationsOptions,
  TransactionalEffect,
  TransactionalRunOptions,
  ReserveOptions,
  RunOptions,
} from './types';
import { durationInput } from './validate';

/**
 * Idempotent operations with effects outside the database (DESIGN guarantee 3). Each
 * `(scope, operation, key)` has one record in the `idempotency` table; `run` reserves it
 * atomically with a fresh owner id and a lease, runs the effect, and finalizes by
 * compare-and-set on the owner, so a stale worker that lost its lease cannot overwrite the
 * outcome. Later duplicates get the stored response, the stored final failure, or an
 * in-progress answer (optionally after waiting). Leases and expiry use the database clock.
 * `runInTransaction` does the same for an effect that writes to the database, committing the
 * record's outcome in the effect's own transaction.
 *
 * ```ts
 * const charges = createOperations({ store, operation: 'charge-card' });
 * const receipt = await charges.run(orderId, { amount, currency }, async (ctx) => {
 *   const charge = await psp.charge({ amount, currency }, { idempotencyKey: ctx.key });
 *   return { chargeId: charge.id };
 * });
 * ```
 */
export function createOperations<Tx = Knex.Transaction>(
  options: OperationsOptions<Tx>,
): Operations<Tx> {
  const rt: OperationsRuntime = createOperationsRuntime(
    resolveOperationsOptions(options as OperationsOptions<unknown>),
  );
  const { store } = rt.options;
  return registerOperationsRuntime<Operations<Tx>>(rt, {
    transactions: rt.options.transactions as TransactionAdapter<Tx>,
    run: (key, request, effect, given) => run(rt, key, request, effect, given),
    runInTransaction: <R>(
      key: string,
      request: unknown,
      effect: TransactionalEffect<R, Tx>,
      given?: TransactionalRunOptions,
    ) =>
      // The adapter checked at construction opens transactions of type Tx.
      runInTransaction(rt, key, request, effect as TransactionalEffect<R, unknown>, given),

    async reserve(key, request, given) {
      const reserveOptions = callOptions<ReserveOptions>(given, 'reserve', RESERVE_KEYS);
      const record = target(rt, key, reserveOptions);
      const retentionMs = durationInput(
        reserveOptions.retentionMs,
        'retentionMs',
        rt.options.defaultRetentionMs,
        1,
      );
      return reserveRecord(rt, record, requestHash(request), retentionMs);
    },

    // Async, so that a bad ref rejects like every other refusal instead of throwing.
    complete: async (ref, response) => complete(rt, refInput(ref, 'complete'), response),
    fail: async (ref, error, failOptions) => fail(rt, refInput(ref, 'fail'), error, failOptions),

    async extendLease(ref, ms) {
      return (await extendLease(rt, refInput(ref, 'extendLease'), ms)).leaseUntil;
    },

    async get(key, getOptions): Promise<OperationRecord | undefined> {
      const record = target(rt, key, callOptions<RunOptions>(getOptions, 'get', GET_KEYS));
      const current = await readRow(poolRunner(store.knex), store.names, record);
      if (current === undefined || current.expired) return undefined;
      return toRecord(current.row);
    },
  });
}
