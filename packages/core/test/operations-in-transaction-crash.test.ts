import { createOperations, createOutbox } from '../src';
import { killChildren } from '../../../test-support/child-process';
import { databaseUrl } from './db';
import {
  spawnOperationCrashChild,
  type OperationCrashPoint,
} from './fixtures/operation-crash-child';
import {
  orderEventsOf,
  ordersOf,
  placeOrder,
  withOrdersStore,
  type OrdersStore,
  type PlacedOrder,
} from './fixtures/orders-support';

/**
 * `runInTransaction` survives a SIGKILL between any two of its steps: a child process places
 * an order and is killed at each point; the parent's retry (after the lease) then finds
 * exactly one order and one outbox event, and gets the child's response when the child had
 * committed.
 */

const OPERATION = 'place-order';
/** Short, so the retry takes over soon; long enough for the child to get through its steps. */
const LEASE_MS = 1_500;

// On both layouts: the outbox event goes into the partitioned outbox through its dedup trigger.
describe.each(['plain', 'partitioned'] as const)(
  'operations.runInTransaction crash safety on postgres, %s layout (child processes killed with SIGKILL)',
  (layout) => {
    let store: OrdersStore;

    withOrdersStore('postgres', (opened) => (store = opened), layout);
    afterEach(async () => {
      await killChildren();
    });

    /** Runs a child until it stops at `stopAt`, kills it there, and says what it reported. */
    async function killedAt(stopAt: OperationCrashPoint, key: string) {
      const child = spawnOperationCrashChild({
        databaseUrl: databaseUrl(),
        schema: store.schema,
        operation: OPERATION,
        key,
        amount: 25,
        leaseMs: LEASE_MS,
        stopAt,
      });
      const report = await child.next('stopped');
      expect(report.at).toBe(stopAt);
      expect({ signal: await child.kill(), stderr: child.stderr() }).toEqual({
        signal: 'SIGKILL',
        stderr: '',
      });
      return report;
    }

    /** The caller's retry: waits out the dead child's lease, then runs or replays. */
    async function retry(key: string): Promise<{ response: PlacedOrder; ran: boolean }> {
      const ops = createOperations({ store, operation: OPERATION, leaseMs: LEASE_MS });
      const outbox = createOutbox({ store });
      let ran = false;
      const response = await ops.runInTransaction(
        key,
        { amount: 25 },
        async (trx, ctx) => {
          ran = true;
          return placeOrder(trx, store, outbox, ctx, 25);
        },
        { waitForInProgressMs: 20_000 },
      );
      return { response, ran };
    }

    it.each<OperationCrashPoint>(['reserved', 'after-insert', 'after-outbox-add', 'effect-done'])(
      'killed before commit (%s): nothing of it commits; the retry places the one order',
      async (stopAt) => {
        const key = `before-${stopAt}`;
        const report = await killedAt(stopAt, key);
        // The dead child's transaction rolled back; its reservation outlives it until the lease.
        const ops = createOperations({ store, operation: OPERATION });
        expect(await ops.get(key)).toMatchObject({ status: 'IN_PROGRESS', attempts: 1 });
        expect(await ordersOf(store, key)).toEqual([]);
        expect(await orderEventsOf(store, key)).toEqual([]);
        const { response, ran } = await retry(key);
        expect(ran).toBe(true);
        expect(response.attempt).toBe(2);
        if (report.order !== undefined) expect(response.orderId).not.toBe(report.order.orderId);
        expect(await ordersOf(store, key)).toEqual([response.orderId]);
        expect(await orderEventsOf(store, key)).toEqual([response.orderId]);
        expect(await ops.get(key)).toMatchObject({ status: 'SUCCEEDED', attempts: 2, response });
      },
    );

    it('killed after commit: the retry replays the first response and places nothing', async () => {
      const key = 'after-commit';
      const report = await killedAt('committed', key);
      const first = report.order!;
      expect(await ordersOf(store, key)).toEqual([first.orderId]);
      const { response, ran } = await retry(key);
      expect(ran).toBe(false);
      // The order id was generated inside the child's attempt: this is its response, replayed.
      expect(JSON.stringify(response)).toBe(JSON.stringify(first));
      expect(await ordersOf(store, key)).toEqual([first.orderId]);
      expect(await orderEventsOf(store, key)).toEqual([first.orderId]);
    });
  },
);
