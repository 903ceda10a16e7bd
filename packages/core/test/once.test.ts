import type { StandardSchemaV1 } from '@standard-schema/spec';
import {
  createInbox,
  createOperations,
  createStore,
  isInvalidOperationInputError,
  isOnceResultError,
  isOperationFailedError,
  isOperationInProgressError,
  onceKey,
  type Handler,
  type HandlerContext,
  type Inbox,
  type InboxOptions,
  type OperationContext,
  type Operations,
} from '../src';
import { databaseUrl, mysqlUrl, openTestStore } from './db';
import { envelope, freshId } from './fixtures/inbox-support';
import { gate } from './fixtures/gate';

type TestStore = Awaited<ReturnType<typeof openTestStore>>;

/** A Standard Schema by hand (core has no validator library): `{ id: string }`. */
const chargeSchema: StandardSchemaV1<{ id: string }, { id: string; checked: true }> = {
  '~standard': {
    version: 1,
    vendor: 'test',
    validate: (value) =>
      typeof value === 'object' &&
      value !== null &&
      typeof (value as { id?: unknown }).id === 'string'
        ? { value: { id: (value as { id: string }).id, checked: true } }
        : { issues: [{ message: 'expected { id: string }', path: ['id'] }] },
  },
};

/** An error the ledger records as final (its own `retriable` flag says so). */
class Declined extends Error {
  readonly retriable = false;
}

// PGlite (which needs the ledger on a second store) is in once-input.test.ts: each PGlite
// takes seconds to start.
describe.each(['postgres', 'mysql'] as const)('ctx.once on %s', (kind) => {
  let store: TestStore;
  /** The ledger's store: the inbox's own, as by default. */
  let ledgerStore: TestStore;
  let ledger: Operations;

  beforeAll(async () => {
    store = await openTestStore(kind);
    ledgerStore = store;
    ledger = createOperations({ store: ledgerStore });
  });
  afterAll(async () => {
    await store.dispose();
  });

  const inbox = (extra: Partial<InboxOptions> = {}): Inbox =>
    createInbox({ store, consumer: freshId('c'), ledger, ...extra });

  it('calls fn once per step with a stable key, and replays its result to a redelivery', async () => {
    const box = inbox();
    const id = freshId();
    const keys: string[] = [];
    let fail = true;
    const handler: Handler = async (ctx) => {
      const charge = await ctx.once('charge', async (key) => {
        keys.push(key);
        return { id: `ch-${keys.length}`, at: new Date(0) };
      });
      const mail = await ctx.once('email', async (key) => {
        keys.push(key);
        return keys.length;
      });
      // The same step again in one run is answered from its record.
      const again = await ctx.once('charge', async () => ({ id: 'never', at: new Date(1) }));
      expect(again).toEqual(charge);
      // The business transaction rolls back; the records stay.
      if (fail) throw new Error('business write failed');
      return { charge, mail };
    };
    const first = await box.process(envelope(id), handler);
    expect(first.status).toBe('failed');
    fail = false;
    const second = await box.process(envelope(id), handler);
    expect(second).toMatchObject({
      status: 'processed',
      // JSON round trip, on the first run and the replay alike.
      result: { charge: { id: 'ch-1', at: new Date(0).toISOString() }, mail: 2 },
    });
    const parent = { kind: 'inbox', namespace: box.consumer, scope: 'default', id } as const;
    expect(keys).toEqual([onceKey(parent, 'charge'), onceKey(parent, 'email')]);
    expect(keys[0]).toMatch(/^once_[0-9a-f]{64}$/);
  });

  /**
   * A handler around `step` that notes what each delivery's `ctx.once` threw and fails the
   * delivery retriably, so that the message stays alive for the next delivery (a final error
   * would dead-letter it at once, and later deliveries would not reach the handler).
   */
  const noting = (step: (ctx: HandlerContext) => Promise<unknown>) => {
    const errors: unknown[] = [];
    const handler: Handler = async (ctx) => {
      try {
        return await step(ctx);
      } catch (error) {
        errors.push(error);
        throw new Error('try again');
      }
    };
    return { errors, handler };
  };

  it('runs fn again with the same key after a retriable failure, never after a final one', async () => {
    const box = inbox();
    const id = freshId();
    const keys: string[] = [];
    let error: Error | undefined = new Error('provider unavailable');
    const { errors, handler } = noting((ctx) =>
      ctx.once('charge', async (key) => {
        keys.push(key);
        if (error !== undefined) throw error;
        return 'ok';
      }),
    );
    await box.process(envelope(id), handler);
    error = new Declined('card declined');
    await box.process(envelope(id), handler);
    error = undefined;
    await box.process(envelope(id), handler);
    expect(keys).toHaveLength(2);
    expect(keys[1]).toBe(keys[0]);
    expect(errors).toHaveLength(3);
    expect(isOperationFailedError(errors[2])).toBe(true);
  });

  it('checks the result with the schema, first run and replay, and keeps the record', async () => {
    const box = inbox();
    const typed = await box.process(envelope(freshId()), async (ctx) => {
      const charge = await ctx.once('charge', async () => ({ id: 'ch-1' }), {
        schema: chargeSchema,
      });
      // The schema's output type: `checked` exists only there.
      return charge.checked;
    });
    expect(typed).toMatchObject({ status: 'processed', result: true });

    const id = freshId();
    let runs = 0;
    const { errors, handler } = noting((ctx) =>
      ctx.once(
        'charge',
        async () => {
          runs += 1;
          return { id: 42 as unknown as string };
        },
        { schema: chargeSchema },
      ),
    );
    await box.process(envelope(id), handler);
    await box.process(envelope(id), handler);
    expect(runs).toBe(1);
    expect(errors).toHaveLength(2);
    for (const error of errors) {
      expect(isOnceResultError(error)).toBe(true);
      expect((error as Error).message).toContain('expected { id: string }');
    }
  });

  it('records an unstorable result as final: a typed error, and fn is not called again', async () => {
    const box = inbox();
    const id = freshId();
    let runs = 0;
    const { errors, handler } = noting((ctx) =>
      ctx.once('charge', async () => {
        runs += 1;
        return { amount: 10n };
      }),
    );
    await box.process(envelope(id), handler);
    await box.process(envelope(id), handler);
    expect(runs).toBe(1);
    expect(isInvalidOperationInputError(errors[0])).toBe(true);
    expect(isOperationFailedError(errors[1])).toBe(true);
  });

  it('lets one of two concurrent calls of a step run fn; the other waits or is refused', async () => {
    const patient = createOperations({
      store: ledgerStore,
      waitForInProgressMs: 5_000,
      pollIntervalMs: 10,
    });
    const open = gate();
    let runs = 0;
    const fn = async () => {
      runs += 1;
      await open.promise;
      return 'charged';
    };
    // The ledger's lease arbitrates in the database: one caller acquires, the other finds the
    // record IN_PROGRESS and waits for its result (patient) or gives up at once (default).
    const outcome = await inbox({ ledger: patient }).process(envelope(freshId()), async (ctx) => {
      const both = Promise.all([ctx.once('charge', fn), ctx.once('charge', fn)]);
      setTimeout(() => open.open(), 200);
      return both;
    });
    expect(outcome).toMatchObject({ status: 'processed', result: ['charged', 'charged'] });
    expect(runs).toBe(1);

    const refused = gate();
    const entered = gate();
    const impatient = await inbox().process(envelope(freshId()), async (ctx) => {
      const first = ctx.once('charge', async () => {
        entered.open();
        await refused.promise;
        return 'charged';
      });
      await entered.promise;
      const second = await ctx.once('charge', fn).catch((error: unknown) => error);
      refused.open();
      await first;
      return isOperationInProgressError(second);
    });
    expect(impatient).toMatchObject({ status: 'processed', result: true });
  });

  it('calls fn again with the same key when its record could not be written', async () => {
    // A ledger on a store client of its own, closed by fn: a real failure of the record's
    // write after the effect succeeded.
    const own = await createStore({
      connectionString: kind === 'mysql' ? mysqlUrl() : databaseUrl(),
      schema: store.schema,
    });
    const consumer = freshId('c');
    const id = freshId();
    const keys: string[] = [];
    const handler =
      (before: () => Promise<void>): Handler =>
      (ctx) =>
        ctx.once('charge', async (key) => {
          keys.push(key);
          await before();
          return 'charged';
        });
    const broken = createInbox({
      store,
      consumer,
      ledger: createOperations({ store: own, leaseMs: 300 }),
    });
    const first = await broken.process(
      envelope(id),
      handler(() => own.close()),
    );
    expect(first.status).toBe('failed');
    // The record stays IN_PROGRESS; after its lease the next delivery takes it over.
    const healthy = createInbox({
      store,
      consumer,
      ledger: createOperations({ store, waitForInProgressMs: 5_000, pollIntervalMs: 20 }),
    });
    const second = await healthy.process(
      envelope(id),
      handler(async () => undefined),
    );
    expect(second).toMatchObject({ status: 'processed', result: 'charged' });
    expect(keys).toHaveLength(2);
    expect(keys[1]).toBe(keys[0]);
  });

  it('works per message in a batch: each message has its own steps and keys', async () => {
    const box = inbox();
    const ids = [freshId(), freshId()];
    const keys = new Map<string, string>();
    let fail = true;
    const handler: Handler = async (ctx) => {
      const key = await ctx.once('charge', async (stepKey) => {
        expect(keys.has(ctx.messageId)).toBe(false);
        keys.set(ctx.messageId, stepKey);
        return stepKey;
      });
      if (fail && ctx.messageId === ids[1]) throw new Error('this one fails');
      return key;
    };
    const first = await box.processBatch(
      ids.map((id) => envelope(id)),
      handler,
    );
    expect(first.map((outcome) => outcome.status)).toEqual(['processed', 'failed']);
    fail = false;
    const second = await box.processBatch([envelope(ids[1])], handler);
    expect(second).toMatchObject([{ status: 'processed', result: keys.get(ids[1]!) }]);
    expect(new Set(keys.values()).size).toBe(2);
  });

  it('is available in operations: a retry of the operation replays its steps', async () => {
    const operation = freshId('op');
    const ops = createOperations({ store: ledgerStore, operation });
    let calls = 0;
    let fail = true;
    const effect = async (ctx: OperationContext): Promise<string> => {
      const paid = await ctx.once('pay', async (key) => {
        calls += 1;
        return key;
      });
      if (fail) throw new Error('later step failed');
      return paid;
    };
    await expect(ops.run('k1', {}, effect)).rejects.toThrow('later step failed');
    fail = false;
    expect(await ops.run('k1', {}, effect)).toBe(
      onceKey({ kind: 'operation', namespace: operation, scope: 'default', id: 'k1' }, 'pay'),
    );
    expect(calls).toBe(1);
  });
});
