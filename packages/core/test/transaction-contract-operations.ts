/**
 * The operations' clauses of the transaction contract (f, and the operations half of g):
 * `runInTransaction` commits the effect's business rows, its outbox events and the stored
 * response in the library's one transaction, and runs an effect once per key.
 */
import { createOperations, createOutbox, type OperationContext } from '../src';
import { eventIds, OPERATION } from './transaction-contract-checks';
import { RowAdded, type ContractLibrary } from './fixtures/transaction-contract-library';

/** Declares the operations clauses for the library `lib()` returns once it is open. */
export function operationsClauses<Tx>(lib: () => ContractLibrary<Tx>) {
  const outboxOf = () => createOutbox({ store: lib().store, transactions: lib().adapter });

  /** An effect that writes the row `<prefix><key>` and its event, then answers. */
  const placing =
    (prefix: string, onRun: () => void = () => undefined) =>
    async (trx: Tx, ctx: OperationContext) => {
      onRun();
      await lib().insertRow(trx, `${prefix}${ctx.key}`);
      const eventId = await outboxOf().add(trx, RowAdded, { id: ctx.key }, { destination: prefix });
      // Values whose JSON text is easy to change by accident: key order, escapes, numbers.
      return { eventId, ownerId: ctx.ownerId, z: 1, a: [1.5, 1e21, -0], text: 'é\u2028"\\' };
    };

  it('(f) runInTransaction commits the business row, the event and the stored response together; the replay returns the same bytes without running', async () => {
    const ops = createOperations({
      store: lib().store,
      operation: OPERATION,
      transactions: lib().adapter,
    });
    let runs = 0;
    const effect = placing('f/', () => (runs += 1));
    const first = await ops.runInTransaction('one', { amount: 5 }, effect);
    expect(await lib().countRows('f/')).toBe(1);
    expect(await eventIds(lib().store, 'f/')).toEqual([first.eventId]);
    const record = await ops.get('one');
    expect(record).toMatchObject({ status: 'SUCCEEDED', attempts: 1 });
    expect(JSON.stringify(record?.response)).toBe(JSON.stringify(first));

    const replay = await ops.runInTransaction('one', { amount: 5 }, effect);
    expect(runs).toBe(1);
    expect(JSON.stringify(replay)).toBe(JSON.stringify(first));
    expect(await lib().countRows('f/')).toBe(1);
    expect(await eventIds(lib().store, 'f/')).toHaveLength(1);
  });

  it('(f) an effect that throws leaves no business row, no event and no response', async () => {
    const ops = createOperations({
      store: lib().store,
      operation: OPERATION,
      transactions: lib().adapter,
    });
    const boom = new Error('the effect failed');
    const failed = ops.runInTransaction('two', {}, async (trx, ctx) => {
      await placing('f-fail/')(trx, ctx);
      throw boom;
    });
    await expect(failed).rejects.toBe(boom);
    expect(await lib().countRows('f-fail/')).toBe(0);
    expect(await eventIds(lib().store, 'f-fail/')).toEqual([]);
    expect(await ops.get('two')).toMatchObject({ status: 'FAILED_RETRIABLE', response: undefined });
  });

  it('(g) 50 concurrent runInTransaction with one key: the effect runs once, one business row, 50 identical responses', async () => {
    const ops = createOperations({
      store: lib().store,
      operation: OPERATION,
      transactions: lib().adapter,
      waitForInProgressMs: 30_000,
      pollIntervalMs: 20,
    });
    let runs = 0;
    const effect = placing('g-op/', () => (runs += 1));
    const responses = await Promise.all(
      Array.from({ length: 50 }, () => ops.runInTransaction('three', { n: 3 }, effect)),
    );
    expect(runs).toBe(1);
    expect(new Set(responses.map((r) => JSON.stringify(r))).size).toBe(1);
    expect(await lib().countRows('g-op/')).toBe(1);
    expect(await eventIds(lib().store, 'g-op/')).toHaveLength(1);
  });
}
