/**
 * The outbox's clauses of the transaction contract (e, h): `outbox.add` writes into the
 * library's own transaction, however it was opened, all or nothing with the business rows,
 * and refuses what is not an open transaction before any SQL.
 */
import { createInbox, createOutbox } from '../src';
import {
  CONSUMER,
  envelope,
  eventIds,
  expectRefusal,
  rejectionOf,
  thrownBy,
  type ContractFeatures,
  written,
} from './transaction-contract-checks';
import { RowAdded, type ContractLibrary } from './fixtures/transaction-contract-library';

type Opener = 'adapter' | 'native';

/** Declares the outbox clauses for the library `lib()` returns once it is open. */
export function outboxClauses<Tx>(lib: () => ContractLibrary<Tx>, features: ContractFeatures) {
  const outboxOf = () => createOutbox({ store: lib().store, transactions: lib().adapter });
  /** Opens a transaction through the adapter, or the library's own way. */
  const opened =
    (how: Opener) =>
    <T>(work: (tx: Tx) => Promise<T>): Promise<T> =>
      how === 'adapter' ? lib().adapter.transaction(work) : lib().nativeTransaction(work);

  it.each<Opener>(['adapter', 'native'])(
    '(e) outbox.add(tx, Type, payload) in a transaction opened by the %s way commits with the business row, and a throw after it rolls both back',
    async (how) => {
      const prefix = `e-${how}/`;
      const outbox = outboxOf();
      const id = await opened(how)(async (tx) => {
        await lib().insertRow(tx, `${prefix}1`);
        return outbox.add(tx, RowAdded, { id: `${prefix}1` }, { destination: prefix });
      });
      expect(await lib().countRows(prefix)).toBe(1);
      expect(await eventIds(lib().store, prefix)).toEqual([id]);

      const boom = new Error('after add');
      const failed = opened(how)(async (tx) => {
        await lib().insertRow(tx, `${prefix}2`);
        await outbox.add(tx, RowAdded, { id: `${prefix}2` }, { destination: prefix });
        throw boom;
      });
      await expect(failed).rejects.toBe(boom);
      expect(await lib().countRows(prefix)).toBe(1);
      expect(await eventIds(lib().store, prefix)).toEqual([id]);
    },
  );

  it('(e) in a handler, outbox.add(ctx.trx, …) and ctx.outbox.add commit with the business row, or roll back with it', async () => {
    const outbox = outboxOf();
    const inbox = createInbox({
      store: lib().store,
      consumer: CONSUMER,
      transactions: lib().adapter,
      outbox,
    });
    const handle = (fail: boolean) =>
      inbox.process(envelope('e-handler/1', fail ? 1 : 2), async (ctx) => {
        await lib().insertRow(ctx.trx, ctx.messageId);
        await ctx.outbox.add(RowAdded, { id: 'via ctx' }, { destination: 'e-handler/' });
        await outbox.add(ctx.trx, RowAdded, { id: 'via trx' }, { destination: 'e-handler/' });
        if (fail) throw new Error('after both adds');
      });
    expect(await handle(true)).toMatchObject({ status: 'failed' });
    expect(await written(lib(), 'e-handler/')).toEqual({ rows: 0, records: [], events: 0 });
    expect(await handle(false)).toMatchObject({ status: 'processed' });
    expect(await written(lib(), 'e-handler/')).toEqual({
      rows: 1,
      records: ['SUCCEEDED'],
      events: 2,
    });
  });

  it('(h) enter and outbox.add refuse the library’s handles that are not a transaction, before any SQL', async () => {
    const { adapter, notTransactions } = lib();
    const outbox = outboxOf();
    for (const [label, value] of notTransactions) {
      // Not a Tx, which is the point: what plain JavaScript (or a cast) could pass.
      const wrong = value as Tx;
      expectRefusal(
        thrownBy(() => adapter.enter(wrong)),
        adapter.library,
      );
      const added = outbox.add(wrong, RowAdded, { id: label }, { destination: 'h/' });
      expectRefusal(await rejectionOf(added), adapter.library);
    }
    expect(await eventIds(lib().store, 'h/')).toEqual([]);
  });

  /** A transaction opened the `how` way that wrote the row `<prefix>1` and committed. */
  async function committed(how: Opener, prefix: string): Promise<Tx> {
    let finished: Tx | undefined;
    await opened(how)(async (tx) => {
      finished = tx;
      await lib().insertRow(tx, `${prefix}1`);
    });
    if (finished === undefined) throw new Error('the transaction did not run');
    expect(await lib().countRows(prefix)).toBe(1);
    return finished;
  }

  for (const how of ['adapter', 'native'] as const) {
    it(`(h) a transaction opened the ${how} way takes no write once committed: outbox.add rejects with InvalidTransactionError and writes nothing`, async () => {
      const prefix = `h-${how}/`;
      const ended = await committed(how, prefix);
      const added = outboxOf().add(ended, RowAdded, { id: 'late' }, { destination: prefix });
      expectRefusal(await rejectionOf(added), lib().adapter.library);
      expect(await eventIds(lib().store, prefix)).toEqual([]);
    });

    const gap = how === 'native' && features.knownGaps?.includes('refuse-finished-native');
    (gap ? it.failing : it)(
      `(h) enter refuses a transaction opened the ${how} way once committed: InvalidTransactionError before any SQL`,
      async () => {
        const prefix = `h-${how}-strict/`;
        const { adapter } = lib();
        const ended = await committed(how, prefix);
        expectRefusal(
          thrownBy(() => adapter.enter(ended)),
          adapter.library,
        );
        const added = outboxOf().add(ended, RowAdded, { id: 'late' }, { destination: prefix });
        expectRefusal(await rejectionOf(added), adapter.library);
        expect(await eventIds(lib().store, prefix)).toEqual([]);
      },
    );
  }
}
