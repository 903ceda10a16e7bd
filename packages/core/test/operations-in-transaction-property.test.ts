import fc, { type JsonValue } from 'fast-check';
import { createOperations, type TransactionalEffect } from '../src';
import { ALL_STORE_KINDS } from './db';
import {
  insertOrder,
  ordersOf,
  withOrdersStore,
  type OrdersStore,
} from './fixtures/orders-support';

/**
 * Any JSON response round-trips byte for byte through `runInTransaction` and its replay: the
 * first caller gets the response as stored, so `JSON.stringify` of the first call, of the
 * replay and of the response itself are one text (key order, U+0000 and lone surrogates
 * included), and the business write committed once. `FC_RUNS` raises the number of runs.
 */
const RUNS = Number(process.env.FC_RUNS ?? 50);

const response = fc.jsonValue({ stringUnit: 'binary', maxDepth: 3 });

describe.each(ALL_STORE_KINDS)('runInTransaction replays any JSON response on %s', (kind) => {
  let store: OrdersStore;
  withOrdersStore(kind, (opened) => (store = opened));

  it('returns the same JSON text to the first call and to its replay', async () => {
    const ops = createOperations({ store, operation: 'json-round-trip' });
    let round = 0;
    await fc.assert(
      fc.asyncProperty(response, async (res) => {
        round += 1;
        const key = `json-${round}`;
        let runs = 0;
        const effect: TransactionalEffect<JsonValue> = async (trx, ctx) => {
          runs += 1;
          await insertOrder(trx, store, ctx, round);
          return res;
        };
        const first = await ops.runInTransaction(key, { round }, effect);
        const replayed = await ops.runInTransaction(key, { round }, effect);
        expect(runs).toBe(1);
        expect(JSON.stringify(first)).toBe(JSON.stringify(res));
        expect(JSON.stringify(replayed)).toBe(JSON.stringify(first));
        expect(JSON.stringify((await ops.get(key))?.response)).toBe(JSON.stringify(first));
        expect(await ordersOf(store, key)).toHaveLength(1);
      }),
      { numRuns: RUNS },
    );
  });
});
