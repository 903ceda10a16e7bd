import type { Knex } from 'knex';
import {
  createOperations,
  createOutbox,
  isInvalidOperationInputError,
  isOperationConflictError,
  isOperationFailedError,
  isResponseTooLargeError,
  type OperationContext,
  type TransactionalOperationStep,
} from '../src';
import { ALL_STORE_KINDS } from './db';
import { gate, rejection } from './fixtures/gate';
import { DeclinedError, freshOperations, TransientError } from './fixtures/operations-support';
import {
  insertOrder,
  orderEventsOf,
  ordersOf,
  placeOrder,
  withOrdersStore,
  type OrdersStore,
} from './fixtures/orders-support';
import { watchStatements } from './fixtures/statements';

describe.each(ALL_STORE_KINDS)('operations.runInTransaction on %s', (kind) => {
  let store: OrdersStore;
  const operations = freshOperations('tx', () => store);
  const outbox = () => createOutbox({ store });
  let sequence = 0;
  /** A fresh key, so tests never share orders. */
  const freshKey = (label: string) => `${label}-${(sequence += 1)}`;

  withOrdersStore(kind, (opened) => (store = opened));

  it('commits the order, its outbox event and SUCCEEDED together, and replays the response', async () => {
    const ops = operations();
    const events = outbox();
    const key = freshKey('order');
    const steps: TransactionalOperationStep[] = [];
    let runs = 0;
    const effect = async (trx: Knex.Transaction, ctx: OperationContext) => {
      runs += 1;
      const order = await placeOrder(trx, store, events, ctx, 42);
      // Key order, a date and nesting all survive: the caller gets the stored JSON.
      return { z: 1, order, at: new Date('2026-01-02T03:04:05.000Z'), a: [null, 'x'] };
    };
    const first = await ops.runInTransaction(key, { amount: 42 }, effect, {
      onStep: (step, ref) => {
        expect(ref.key).toBe(key);
        steps.push(step);
      },
    });
    expect(steps).toEqual(['reserved', 'effect-done', 'committed']);
    expect(first.at).toBe('2026-01-02T03:04:05.000Z');
    const replayed = await ops.runInTransaction(key, { amount: 42 }, effect);
    expect(runs).toBe(1);
    expect(JSON.stringify(replayed)).toBe(JSON.stringify(first));
    expect(await ordersOf(store, key)).toEqual([first.order.orderId]);
    expect(await orderEventsOf(store, key)).toEqual([first.order.orderId]);
    const record = await ops.get(key);
    expect(record).toMatchObject({ status: 'SUCCEEDED', attempts: 1, response: first });
    expect(record?.leaseUntil).toBeUndefined();
  });

  it('rolls everything back when the effect throws, records FAILED_RETRIABLE, and runs again', async () => {
    const ops = operations();
    const events = outbox();
    const key = freshKey('retry');
    const failure = new TransientError('stock service timed out');
    const error = await rejection(
      ops.runInTransaction(key, { amount: 5 }, async (trx, ctx) => {
        await placeOrder(trx, store, events, ctx, 5);
        throw failure;
      }),
    );
    // The caller gets the effect's own error; nothing of the effect committed.
    expect(error).toBe(failure);
    expect(await ordersOf(store, key)).toEqual([]);
    expect(await orderEventsOf(store, key)).toEqual([]);
    expect(await ops.get(key)).toMatchObject({
      status: 'FAILED_RETRIABLE',
      error: { name: 'TransientError', message: 'stock service timed out' },
    });
    const second = await ops.runInTransaction(key, { amount: 5 }, (trx, ctx) =>
      placeOrder(trx, store, events, ctx, 5),
    );
    expect(second.attempt).toBe(2);
    expect(await ordersOf(store, key)).toEqual([second.orderId]);
    expect(await orderEventsOf(store, key)).toEqual([second.orderId]);
  });

  it('records a final failure and replays it as OperationFailedError, never running again', async () => {
    const ops = operations();
    const events = outbox();
    const key = freshKey('final');
    let runs = 0;
    const effect = async (trx: Knex.Transaction, ctx: OperationContext) => {
      runs += 1;
      await placeOrder(trx, store, events, ctx, 7);
      throw new DeclinedError('card declined');
    };
    const first = await rejection(ops.runInTransaction(key, { amount: 7 }, effect));
    expect(first).toBeInstanceOf(DeclinedError);
    const replay = await rejection(ops.runInTransaction(key, { amount: 7 }, effect));
    expect(isOperationFailedError(replay)).toBe(true);
    expect(replay).toMatchObject({
      failure: { name: 'DeclinedError', message: 'card declined', code: 'CARD_DECLINED' },
    });
    expect(runs).toBe(1);
    expect(await ordersOf(store, key)).toEqual([]);
    expect(await orderEventsOf(store, key)).toEqual([]);
    expect(await ops.get(key)).toMatchObject({ status: 'FAILED_FINAL' });
  });

  it('refuses the same key with a different request as a conflict', async () => {
    const ops = operations();
    const key = freshKey('conflict');
    await ops.runInTransaction(key, { amount: 1 }, (trx, ctx) => insertOrder(trx, store, ctx, 1));
    let ran = false;
    const error = await rejection(
      ops.runInTransaction(key, { amount: 2 }, async () => {
        ran = true;
      }),
    );
    expect(isOperationConflictError(error)).toBe(true);
    expect(ran).toBe(false);
    expect(await ordersOf(store, key)).toHaveLength(1);
  });

  it('rolls back a response it cannot store and records it as a final failure', async () => {
    const ops = operations({ maxResponseBytes: 64 });
    const key = freshKey('large');
    const error = await rejection(
      ops.runInTransaction(key, 1, async (trx, ctx) => {
        await insertOrder(trx, store, ctx, 1);
        return { blob: 'x'.repeat(100) };
      }),
    );
    expect(isResponseTooLargeError(error)).toBe(true);
    expect(await ordersOf(store, key)).toEqual([]);
    const replay = await rejection(ops.runInTransaction(key, 1, async () => 'never'));
    expect(replay).toMatchObject({
      code: 'OPERATION_FAILED',
      failure: { code: 'RESPONSE_TOO_LARGE' },
    });
  });

  it('lets the effect extend its lease from inside the transaction', async () => {
    const ops = operations({ leaseMs: 200 });
    const key = freshKey('extend');
    const response = await ops.runInTransaction(key, 1, async (trx, ctx) => {
      const until = await ctx.extendLease(10_000);
      await new Promise((resolve) => setTimeout(resolve, 300));
      const order = await insertOrder(trx, store, ctx, 1);
      return { order, until: until.toISOString(), aborted: ctx.signal.aborted };
    });
    expect(response.aborted).toBe(false);
    expect(await ordersOf(store, key)).toEqual([response.order.orderId]);
  });

  it('treats a throw from onStep as a crash there: rolled back, nothing recorded', async () => {
    const ops = operations({ leaseMs: 100 });
    const events = outbox();
    const key = freshKey('hook');
    const crash = new Error('crash at effect-done');
    const error = await rejection(
      ops.runInTransaction(key, 1, (trx, ctx) => placeOrder(trx, store, events, ctx, 1), {
        onStep: (step) => {
          if (step === 'effect-done') throw crash;
        },
      }),
    );
    expect(error).toBe(crash);
    expect(await ordersOf(store, key)).toEqual([]);
    // Still IN_PROGRESS, as after a crash: the next call takes over once the lease ran out.
    expect(await ops.get(key)).toMatchObject({ status: 'IN_PROGRESS' });
    const retried = await ops.runInTransaction(
      key,
      1,
      (trx, ctx) => placeOrder(trx, store, events, ctx, 1),
      { waitForInProgressMs: 5_000 },
    );
    expect(retried.attempt).toBe(2);
    expect(await ordersOf(store, key)).toEqual([retried.orderId]);
    expect(await orderEventsOf(store, key)).toEqual([retried.orderId]);
  });

  it('refuses arguments it cannot use before any SQL', async () => {
    const ops = operations();
    let queries = 0;
    const stopWatching = watchStatements(store.knex, () => {
      queries += 1;
    });
    try {
      const calls: Array<[() => Promise<unknown>, string]> = [
        [() => ops.runInTransaction('k', 1, 'effect' as never), 'needs an effect function'],
        [
          () => ops.runInTransaction('k', 1, async () => 1, { onstep: () => undefined } as never),
          'runInTransaction: unknown option `onstep`; did you mean `onStep`?',
        ],
        [() => ops.runInTransaction('k', 1, async () => 1, { onStep: 5 } as never), 'onStep'],
        [() => ops.runInTransaction('k\u0000', 1, async () => 1), 'key'],
        [() => ops.runInTransaction('k', 1, async () => 1, 'x' as never), 'must be an object'],
        // onStep belongs to runInTransaction only.
        [
          () => ops.run('k', 1, async () => 1, { onStep: () => undefined } as never),
          'run: unknown option `onStep`',
        ],
        // reserve and get check their keys too: a misspelt scope must not go to the default.
        [
          () => ops.reserve('k', 1, { scop: 'tenant-a' } as never),
          'reserve: unknown option `scop`; did you mean `scope`?',
        ],
        [() => ops.get('k', { retentionMs: 1 } as never), 'get: unknown option `retentionMs`'],
      ];
      for (const [call, message] of calls) {
        const error = await rejection(call());
        expect(isInvalidOperationInputError(error)).toBe(true);
        expect((error as Error).message).toContain(message);
      }
      expect(queries).toBe(0);
    } finally {
      stopWatching();
    }
  });
});

describe('operations.runInTransaction on pglite (one connection)', () => {
  let store: OrdersStore;
  withOrdersStore('pglite', (opened) => (store = opened));

  it('makes a duplicate wait for the open transaction, then replays its response', async () => {
    const ops = createOperations({ store, operation: 'lite' });
    const inEffect = gate();
    const hold = gate();
    const first = ops.runInTransaction('k', 1, async (trx, ctx) => {
      const order = await insertOrder(trx, store, ctx, 1);
      inEffect.open();
      await hold.promise;
      return order;
    });
    await inEffect.promise;
    // The duplicate needs the store's only connection, which the transaction holds.
    let duplicateSettled = false;
    const duplicate = ops
      .runInTransaction('k', 1, async () => 'never')
      .finally(() => {
        duplicateSettled = true;
      });
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(duplicateSettled).toBe(false);
    hold.open();
    const order = await first;
    expect(JSON.stringify(await duplicate)).toBe(JSON.stringify(order));
    expect(await ordersOf(store, 'k')).toEqual([order.orderId]);
  });
});
