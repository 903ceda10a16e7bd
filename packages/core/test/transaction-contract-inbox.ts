/**
 * The inbox's clauses of the transaction contract (a–d, and the inbox half of g): the dedup
 * record commits with the handler's own writes through the library, whatever the handler
 * does, for one message, a batch, or many copies at once.
 */
import { createInbox, type HandlerContext } from '../src';
import {
  CONSUMER,
  envelope,
  type ContractFeatures,
  failedOutcome,
  NOTHING,
  ONCE,
  writeRowAndEvent,
  written,
} from './transaction-contract-checks';
import { RowAdded, type ContractLibrary } from './fixtures/transaction-contract-library';

/** Declares the inbox clauses for the library `lib()` returns once it is open. */
export function inboxClauses<Tx>(lib: () => ContractLibrary<Tx>, features: ContractFeatures) {
  const inboxOf = () =>
    createInbox({ store: lib().store, consumer: CONSUMER, transactions: lib().adapter });

  it('(a) process commits the business row, the dedup record and the handler’s event together; a duplicate writes nothing', async () => {
    const inbox = inboxOf();
    let runs = 0;
    const write = writeRowAndEvent(lib(), 'a/');
    const handler = async (ctx: HandlerContext<Tx>) => {
      runs += 1;
      await write(ctx);
    };
    const first = await inbox.process(envelope('a/1'), handler);
    expect(first).toMatchObject({ status: 'processed', messageId: 'a/1', attempt: 1 });
    expect(await written(lib(), 'a/')).toEqual(ONCE);
    expect(await inbox.process(envelope('a/1', 2), handler)).toMatchObject({
      status: 'duplicate',
    });
    expect(runs).toBe(1);
    expect(await written(lib(), 'a/')).toEqual(ONCE);
  });

  it('(b) a handler that throws leaves no business row, no dedup record and no event; the redelivery runs it again', async () => {
    const inbox = inboxOf();
    const boom = new Error('the handler failed');
    const outcome = await inbox.process(envelope('b/1'), async (ctx) => {
      await writeRowAndEvent(lib(), 'b/')(ctx);
      throw boom;
    });
    expect(failedOutcome(outcome)).toMatchObject({ retriable: true, error: boom });
    expect(await written(lib(), 'b/')).toEqual(NOTHING);
    const retried = await inbox.process(envelope('b/1', 2), writeRowAndEvent(lib(), 'b/'));
    expect(retried).toMatchObject({ status: 'processed', attempt: 2 });
    expect(await written(lib(), 'b/')).toEqual(ONCE);
  });

  if (features.failedStatementUndoes === 'statement') {
    it('(c) on MySQL a handler that swallows a failed statement of its own commits the rest: the failed statement alone was undone', async () => {
      const outcome = await inboxOf().process(envelope('c/1'), async (ctx) => {
        await writeRowAndEvent(lib(), 'c/')(ctx);
        try {
          // The same row again: MySQL undoes this statement only and the transaction goes on
          // (docs/store.md), so what the handler wrote before it commits.
          await lib().insertRow(ctx.trx, ctx.messageId);
        } catch {
          // swallowed: on MySQL the handler's own choice, not a half-written transaction
        }
      });
      expect(outcome).toMatchObject({ status: 'processed' });
      expect(await written(lib(), 'c/')).toEqual(ONCE);
    });
  } else {
    it('(c) a handler that swallows a failed statement of its own does not commit half: failed with TRANSACTION_ABORTED, nothing written', async () => {
      const outcome = await inboxOf().process(envelope('c/1'), async (ctx) => {
        await writeRowAndEvent(lib(), 'c/')(ctx);
        try {
          // The same row again: the library's statement fails, and PostgreSQL aborts the
          // transaction. The handler catches it and returns as if all went well.
          await lib().insertRow(ctx.trx, ctx.messageId);
        } catch {
          // swallowed: the bug the inbox must catch
        }
      });
      const failed = failedOutcome(outcome);
      expect(failed).toMatchObject({ retriable: true, error: { code: 'TRANSACTION_ABORTED' } });
      expect(await written(lib(), 'c/')).toEqual(NOTHING);
    });
  }

  if (features.savepoints) {
    it('(c) a failed statement the handler recovered from in the library’s own savepoint commits the rest', async () => {
      const { savepoint } = lib();
      if (savepoint === undefined) throw new Error('the library has no savepoint helper');
      const outcome = await inboxOf().process(envelope('c2/1'), async (ctx) => {
        await writeRowAndEvent(lib(), 'c2/')(ctx);
        try {
          await savepoint(ctx.trx, (nested) => lib().insertRow(nested, ctx.messageId));
        } catch {
          // recovered: the savepoint was rolled back, the transaction goes on
        }
      });
      expect(outcome).toMatchObject({ status: 'processed' });
      expect(await written(lib(), 'c2/')).toEqual(ONCE);
    });
  }

  it('(d) processBatch of 20 with one poison message: the 19 others commit, the poison is isolated', async () => {
    const ids = Array.from({ length: 20 }, (_, i) => `d/${String(i).padStart(2, '0')}`);
    const poison = 'd/07';
    const outcomes = await inboxOf().processBatch(
      ids.map((id) => envelope(id)),
      async ({ trx, messageId, outbox }) => {
        await lib().insertRow(trx, messageId);
        await outbox.add(RowAdded, { id: messageId }, { destination: 'd/' });
        // The poison writes its row twice: the library's statement fails and the handler throws.
        if (messageId === poison) await lib().insertRow(trx, messageId);
      },
    );
    expect(outcomes.map((o) => o.status)).toEqual(
      ids.map((id) => (id === poison ? 'dead-lettered' : 'processed')),
    );
    // A unique violation (SQLSTATE 23505) is the message's fault for good, through any library.
    expect(outcomes[7]).toMatchObject({ reason: 'NON_RETRIABLE' });
    expect(await lib().countRows(poison)).toBe(0);
    // The poison's record is its dead letter's (FAILED_FINAL), written after the rollback.
    expect(await written(lib(), 'd/')).toEqual({
      rows: 19,
      records: ids.map((id) => (id === poison ? 'FAILED_FINAL' : 'SUCCEEDED')),
      events: 19,
    });
  });

  it('(g) 50 concurrent deliveries of one message: one processed, 49 duplicates, one business row', async () => {
    const inbox = inboxOf();
    const outcomes = await Promise.all(
      Array.from({ length: 50 }, () =>
        inbox.process(envelope('g/1'), writeRowAndEvent(lib(), 'g/')),
      ),
    );
    const statuses = outcomes.map((o) => o.status);
    expect(statuses.filter((s) => s === 'processed')).toHaveLength(1);
    expect(statuses.filter((s) => s === 'duplicate')).toHaveLength(49);
    expect(await written(lib(), 'g/')).toEqual(ONCE);
  });
}
