import {
  createInbox,
  createOperations,
  ConfigurationError,
  isInvalidOperationInputError,
  isOnceUnavailableError,
  type HandlerContext,
} from '../src';
import { openTestStore } from './db';
import { countRows, envelope, freshId } from './fixtures/inbox-support';

type TestStore = Awaited<ReturnType<typeof openTestStore>>;

/** What `ctx.once` threw, called with arguments as plain JavaScript may pass them. */
async function refusal(ctx: HandlerContext, ...args: unknown[]): Promise<unknown> {
  const once = ctx.once as (...given: unknown[]) => Promise<unknown>;
  try {
    await once(...args);
  } catch (error) {
    return error;
  }
  return undefined;
}

describe('ctx.once refuses what it cannot use, before running anything', () => {
  let store: TestStore;
  beforeAll(async () => {
    store = await openTestStore('postgres');
  });
  afterAll(async () => {
    await store.dispose();
  });

  it('refuses bad steps, a missing fn, bad options and a schema that is not one', async () => {
    let runs = 0;
    const fn = async () => {
      runs += 1;
      return 1;
    };
    const inbox = createInbox({ store, consumer: freshId('c') });
    const outcome = await inbox.process(envelope(freshId()), async (ctx) => {
      const cases: unknown[][] = [
        ['', fn],
        ['x'.repeat(101), fn],
        [42, fn],
        ['a\u0000b', fn],
        ['charge'],
        ['charge', 'not a function'],
        ['charge', fn, 'options'],
        ['charge', fn, { schema: {} }],
        ['charge', fn, { shcema: undefined }],
      ];
      const errors = await Promise.all(cases.map((args) => refusal(ctx, ...args)));
      return errors.map((error) => isInvalidOperationInputError(error));
    });
    expect(outcome).toMatchObject({ status: 'processed', result: Array(9).fill(true) });
    expect(runs).toBe(0);
    expect(await countRows(store, 'idempotency')).toBe(0);
  });

  it('refuses a ledger that is not operations, at construction', () => {
    for (const ledger of [{}, 'ops', null]) {
      expect(() => createInbox({ store, consumer: 'c', ledger: ledger as never })).toThrow(
        ConfigurationError,
      );
    }
  });
});

// One PGlite (each takes seconds to start): as the handler's store, and as a ledger's.
describe('ctx.once on PGlite', () => {
  let lite: TestStore;
  let pg: TestStore;
  beforeAll(async () => {
    lite = await openTestStore('pglite');
    pg = await openTestStore('postgres');
  });
  afterAll(async () => {
    await pg.dispose();
    await lite.dispose();
  });

  it("says why it cannot record on the PGlite the handler's transaction holds", async () => {
    let runs = 0;
    const outcome = await createInbox({ store: lite, consumer: freshId('c') }).process(
      envelope(freshId()),
      (ctx) =>
        refusal(ctx, 'charge', async () => {
          runs += 1;
        }).then(isOnceUnavailableError),
    );
    expect(outcome).toMatchObject({ status: 'processed', result: true });
    expect(runs).toBe(0);
    // Given explicitly, the same mistake is refused at construction.
    expect(() =>
      createInbox({ store: lite, consumer: 'c', ledger: createOperations({ store: lite }) }),
    ).toThrow(/PGlite/);
  });

  it("works in an operation's run on PGlite, and refuses in runInTransaction (its transaction holds the connection)", async () => {
    const ops = createOperations({ store: lite, operation: freshId('op') });
    let runs = 0;
    const step = async () => (runs += 1);
    expect(await ops.run('k', {}, (ctx) => ctx.once('charge', step))).toBe(1);
    const refused = await ops
      .runInTransaction('k2', {}, (_trx, ctx) => ctx.once('charge', step))
      .catch((error: unknown) => error);
    expect(isOnceUnavailableError(refused)).toBe(true);
    expect(runs).toBe(1);
  });

  it('records in a ledger on PGlite', async () => {
    const inbox = createInbox({
      store: pg,
      consumer: freshId('c'),
      ledger: createOperations({ store: lite }),
    });
    const id = freshId();
    let runs = 0;
    const before = await countRows(lite, 'idempotency');
    const handler = (ctx: HandlerContext) => ctx.once('charge', async () => (runs += 1));
    await inbox.process(envelope(id), async (ctx) => {
      await handler(ctx);
      throw new Error('roll back');
    });
    const replay = await inbox.process(envelope(id), handler);
    expect(replay).toMatchObject({ status: 'processed', result: 1 });
    expect(runs).toBe(1);
    expect(await countRows(lite, 'idempotency')).toBe(before + 1);
  });
});
