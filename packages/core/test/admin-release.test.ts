import {
  LeaseLostError,
  OperationInProgressError,
  createAdmin,
  createInbox,
  createOperations,
  type Admin,
} from '../src';
import { countEffects, createEffectsTable, writeEffect } from '../../../test-support/effects';
import { waitFor } from '../../../test-support/wait-for';
import { ALL_STORE_KINDS, openTestStore } from './db';
import { envelope, freshId } from './fixtures/inbox-support';

type TestStore = Awaited<ReturnType<typeof openTestStore>>;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A promise and the function that resolves it. */
function gate(): { opened: Promise<void>; open(): void } {
  let open = (): void => undefined;
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { opened, open };
}

describe.each(ALL_STORE_KINDS)('operations.release on %s', (kind) => {
  let store: TestStore;
  let admin: Admin;

  beforeAll(async () => {
    store = await openTestStore(kind);
    await createEffectsTable(store);
    admin = createAdmin(store);
  });
  afterAll(async () => {
    await store.dispose();
  });

  it('releases a record whose owner died past its lease; the next call runs the effect once', async () => {
    const operation = freshId('charge');
    const key = freshId('order');
    const ops = createOperations({ store, operation, leaseMs: 50 });
    const effect = async (trx: Parameters<Parameters<typeof ops.runInTransaction>[2]>[0]) => {
      await writeEffect(trx, store, key);
      return { charged: true };
    };
    // The owner "dies" right after reserving: the business transaction never opens.
    await expect(
      ops.runInTransaction(key, { amount: 5 }, effect, {
        onStep: (step) => {
          if (step === 'reserved') throw new Error('process killed');
        },
      }),
    ).rejects.toThrow('process killed');
    expect(await admin.operations.get({ operation, key })).toMatchObject({
      status: 'IN_PROGRESS',
    });
    await sleep(80);
    expect((await admin.status()).operations).toContainEqual({
      operation,
      inProgress: 0,
      pastLease: 1,
    });

    expect(await admin.operations.release({ operation, key })).toBe(true);
    const released = await ops.get(key);
    expect(released).toMatchObject({ status: 'FAILED_RETRIABLE' });
    expect(released!.error).toMatchObject({ code: 'RELEASED' });
    expect((await admin.status()).operations.find((o) => o.operation === operation)).toBe(
      undefined,
    );

    expect(await ops.runInTransaction(key, { amount: 5 }, effect)).toEqual({ charged: true });
    expect(await countEffects(store, key)).toBe(1);
    expect(await ops.get(key)).toMatchObject({ status: 'SUCCEEDED', attempts: 2 });
    // A different request under the same key is still refused: the request hash was kept.
    await expect(ops.run(key, { amount: 6 }, () => Promise.resolve(1))).rejects.toThrow();
  });

  it('force releases a record within its lease; the old owner is fenced off', async () => {
    const operation = freshId('refund');
    const key = freshId('r');
    const ops = createOperations({ store, operation, leaseMs: 600_000 });
    const hang = gate();
    const started = gate();
    let runs = 0;
    // The first owner hangs inside its effect, holding a ten-minute lease.
    const first = ops.run(key, { v: 1 }, async () => {
      runs += 1;
      started.open();
      await hang.opened;
      return 'first';
    });
    await started.opened;
    await expect(ops.run(key, { v: 1 }, () => Promise.resolve('second'))).rejects.toBeInstanceOf(
      OperationInProgressError,
    );
    expect(await admin.operations.release({ operation, key })).toBe(false);
    expect(await admin.operations.release({ operation, key }, { force: true })).toBe(true);

    expect(
      await ops.run(key, { v: 1 }, () => {
        runs += 1;
        return Promise.resolve('second');
      }),
    ).toBe('second');
    hang.open();
    await expect(first).rejects.toBeInstanceOf(LeaseLostError);
    expect(runs).toBe(2);
    expect(await ops.get(key)).toMatchObject({ status: 'SUCCEEDED', response: 'second' });
  });

  // Not on PGlite: it has one connection, which the handler's open transaction holds.
  if (kind !== 'pglite') {
    it('an inbox claim is never held in progress: nothing to release', async () => {
      const consumer = freshId('inbox');
      const inbox = createInbox({ store, consumer });
      const hang = gate();
      const started = gate();
      const id = freshId();
      // The inbox writes its record SUCCEEDED inside the business transaction, so while the
      // handler runs there is no committed IN_PROGRESS record to see or to release; a consumer
      // that dies rolls it back and the broker redelivers.
      const processing = inbox.process(envelope(id), async (ctx) => {
        started.open();
        await hang.opened;
        await writeEffect(ctx.trx, store, ctx.messageId);
      });
      await started.opened;
      expect(await admin.operations.list({ operation: consumer })).toEqual([]);
      expect(
        await admin.operations.release({ operation: consumer, key: id }, { force: true }),
      ).toBe(false);
      hang.open();
      expect((await processing).status).toBe('processed');
      await waitFor('the handled count', async () =>
        (await admin.status()).consumers.some(
          (c) => c.name === consumer && c.handledLastHour === 1,
        ),
      );
      expect(
        await admin.operations.release({ operation: consumer, key: id }, { force: true }),
      ).toBe(false);
      expect(await countEffects(store, id)).toBe(1);
    });
  }
});
