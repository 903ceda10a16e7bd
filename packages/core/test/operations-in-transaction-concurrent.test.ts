import type { Knex } from 'knex';
import {
  createOutbox,
  isLeaseLostError,
  isOperationConflictError,
  isOperationInProgressError,
  type OperationContext,
  type Operations,
} from '../src';
import { waitFor } from '../../../test-support/wait-for';
import { gate, rejection } from './fixtures/gate';
import { freshOperations } from './fixtures/operations-support';
import {
  orderEventsOf,
  ordersOf,
  placeOrder,
  withOrdersStore,
  type OrdersStore,
  type PlacedOrder,
} from './fixtures/orders-support';

/**
 * `runInTransaction` where several connections meet: PostgreSQL and MySQL, not PGlite (it has
 * one connection, which an open business transaction holds, so nobody meets it there).
 */

const SOON = { timeoutMs: 5_000, intervalMs: 20 };

describe.each(['postgres', 'mysql'] as const)(
  'operations.runInTransaction with concurrent callers on %s',
  (kind) => {
    let store: OrdersStore;
    const operations = freshOperations('conc-tx', () => store);
    const outbox = () => createOutbox({ store });

    withOrdersStore(kind, (opened) => (store = opened));

    it('holds no lock while the effect runs: duplicates are told at once, nothing shows before commit', async () => {
      const ops = operations();
      const events = outbox();
      const inEffect = gate();
      const hold = gate();
      const atEffectDone = gate();
      const release = gate();
      const first = ops.runInTransaction(
        'quiet',
        { amount: 3 },
        async (trx, ctx) => {
          const order = await placeOrder(trx, store, events, ctx, 3);
          inEffect.open();
          await hold.promise;
          return order;
        },
        {
          onStep: async (step) => {
            if (step !== 'effect-done') return;
            atEffectDone.open();
            await release.promise;
          },
        },
      );
      await inEffect.promise;
      const started = Date.now();
      const busy = await rejection(
        ops.runInTransaction('quiet', { amount: 3 }, async () => 'never'),
      );
      expect(isOperationInProgressError(busy)).toBe(true);
      const conflict = await rejection(
        ops.runInTransaction('quiet', { amount: 4 }, async () => 'never'),
      );
      expect(isOperationConflictError(conflict)).toBe(true);
      // Answered from the reservation's committed row, not after waiting on a row lock.
      expect(Date.now() - started).toBeLessThan(1_000);
      hold.open();
      await atEffectDone.promise;
      // SUCCEEDED and the order are written but not committed: other connections see neither.
      expect(await ops.get('quiet')).toMatchObject({ status: 'IN_PROGRESS' });
      expect(await ordersOf(store, 'quiet')).toEqual([]);
      expect(await orderEventsOf(store, 'quiet')).toEqual([]);
      release.open();
      const order = await first;
      expect(await ops.get('quiet')).toMatchObject({ status: 'SUCCEEDED', response: order });
      expect(await ordersOf(store, 'quiet')).toEqual([order.orderId]);
      expect(await orderEventsOf(store, 'quiet')).toEqual([order.orderId]);
    });

    it('rolls back the order of an owner that lost its lease to a takeover', async () => {
      const ops = operations({ leaseMs: 150 });
      const events = outbox();
      const inEffect = gate();
      const takenOver = gate();
      let abortReason: unknown;
      const slow = ops.runInTransaction('takeover', { amount: 1 }, async (trx, ctx) => {
        const order = await placeOrder(trx, store, events, ctx, 1);
        inEffect.open();
        await new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve()));
        abortReason = ctx.signal.reason;
        await takenOver.promise;
        return order;
      });
      await inEffect.promise;
      const fast = await waitFor(
        'a duplicate to take over the expired lease',
        async () => {
          try {
            return await ops.runInTransaction('takeover', { amount: 1 }, (trx, ctx) =>
              placeOrder(trx, store, events, ctx, 1),
            );
          } catch (error) {
            if (isOperationInProgressError(error)) return undefined;
            throw error;
          }
        },
        SOON,
      );
      expect(fast.attempt).toBe(2);
      takenOver.open();
      const error = await rejection(slow);
      expect(isLeaseLostError(error)).toBe(true);
      expect(error).toMatchObject({ currentStatus: 'SUCCEEDED' });
      expect(isLeaseLostError(abortReason)).toBe(true);
      // Only the new owner's order and event committed; the record is its.
      expect(await ordersOf(store, 'takeover')).toEqual([fast.orderId]);
      expect(await orderEventsOf(store, 'takeover')).toEqual([fast.orderId]);
      expect(await ops.get('takeover')).toMatchObject({ status: 'SUCCEEDED', response: fast });
    });

    /**
     * Settles `count` concurrent calls of `key`. The effect holds its transaction open until
     * every other call settled (200 ms when they wait for it).
     */
    async function concurrently(
      ops: Operations,
      key: string,
      count: number,
      options: { waitForInProgressMs?: number } = {},
    ) {
      const events = outbox();
      const othersSettled = gate();
      let settled = 0;
      let runs = 0;
      const effect = async (trx: Knex.Transaction, ctx: OperationContext): Promise<PlacedOrder> => {
        runs += 1;
        const order = await placeOrder(trx, store, events, ctx, 9);
        // Hold the transaction open while the duplicates arrive (bounded, should one hang).
        let timer: ReturnType<typeof setTimeout> | undefined;
        await Promise.race([
          othersSettled.promise,
          new Promise((resolve) => {
            timer = setTimeout(resolve, options.waitForInProgressMs === undefined ? 10_000 : 200);
          }),
        ]);
        clearTimeout(timer);
        return order;
      };
      const results = await Promise.all(
        Array.from({ length: count }, () =>
          ops
            .runInTransaction(key, { amount: 9 }, effect, options)
            .then(
              (value) => ({ ok: true as const, value }),
              (error: unknown) => ({ ok: false as const, error }),
            )
            .finally(() => {
              settled += 1;
              if (settled === count - 1) othersSettled.open();
            }),
        ),
      );
      return { results, runs: () => runs };
    }

    it('runs once for 50 concurrent calls of one key: the others are told it is in progress or replayed', async () => {
      const ops = operations();
      const { results, runs } = await concurrently(ops, 'hot-1', 50);
      expect(runs()).toBe(1);
      const orders = await ordersOf(store, 'hot-1');
      expect(orders).toHaveLength(1);
      expect(await orderEventsOf(store, 'hot-1')).toEqual(orders);
      const record = await ops.get('hot-1');
      expect(record?.status).toBe('SUCCEEDED');
      const stored = JSON.stringify(record?.response);
      for (const result of results) {
        if (result.ok) expect(JSON.stringify(result.value)).toBe(stored);
        else expect(isOperationInProgressError(result.error)).toBe(true);
      }
      expect(results.filter((r) => r.ok).length).toBeGreaterThanOrEqual(1);
    });

    it('gives all 50 concurrent waiting calls of one key the same response', async () => {
      const ops = operations({ pollIntervalMs: 10 });
      const { results, runs } = await concurrently(ops, 'hot-2', 50, {
        waitForInProgressMs: 20_000,
      });
      expect(runs()).toBe(1);
      const orders = await ordersOf(store, 'hot-2');
      expect(orders).toHaveLength(1);
      expect(await orderEventsOf(store, 'hot-2')).toEqual(orders);
      const texts = results.map((r) => (r.ok ? JSON.stringify(r.value) : String(r.error)));
      expect(new Set(texts).size).toBe(1);
      expect(JSON.parse(texts[0]!)).toMatchObject({ orderId: orders[0], attempt: 1 });
    });
  },
);
