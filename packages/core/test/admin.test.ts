import {
  ConfigurationError,
  FinalError,
  createAdmin,
  createInbox,
  createMemoryPublisher,
  createOperations,
  createOutbox,
  createRelay,
  createStore,
  hasErrorCode,
  type Admin,
  type HandlerContext,
  type OutboxEvent,
  type Relay,
} from '../src';
import { createEffectsTable, writeEffect } from '../../../test-support/effects';
import { ALL_STORE_KINDS, databaseUrl, mysqlUrl, openTestStore, uniqueSchema } from './db';
import { countRows, envelope, freshId } from './fixtures/inbox-support';

type TestStore = Awaited<ReturnType<typeof openTestStore>>;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Runs relay cycles until one claims nothing. */
async function drain(relay: Relay): Promise<void> {
  for (let i = 0; i < 50; i += 1) if ((await relay.runOnce()).claimed === 0) return;
  throw new Error('relay still busy after 50 cycles');
}

describe.each(ALL_STORE_KINDS)('createAdmin on %s', (kind) => {
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

  const add = (events: OutboxEvent | OutboxEvent[]): Promise<string[]> =>
    store.knex.transaction((trx) => createOutbox({ store }).add(trx, events));
  const handled = async (ctx: HandlerContext) => {
    await writeEffect(ctx.trx, store, ctx.messageId);
  };

  it('status: reads every figure from data the inbox, outbox, relay and operations made', async () => {
    const empty = await admin.status();
    expect(empty).toMatchObject({
      schema: store.schema,
      outbox: [],
      deadLetters: [],
      consumers: [],
      operations: [],
      retention: { expiredDedupRecords: 0, publishedOutboxRows: 0, countLimit: 100_000 },
    });
    expect(empty.at).toBeInstanceOf(Date);

    // Outbox: two published to `orders`, one dead on `orders` (non-retriable publish
    // failure), two pending on `emails` (never relayed).
    const publisher = createMemoryPublisher();
    publisher.failKey('poison', { retriable: false });
    await add([
      { destination: 'orders', key: 'k1', payload: { n: 1 } },
      { destination: 'orders', key: 'k2', payload: { n: 2 } },
      { destination: 'orders', key: 'poison', payload: { n: 3 } },
    ]);
    await drain(createRelay({ store, publisher, onPublished: 'keep' }));
    await add([
      { destination: 'emails', payload: 'a' },
      { destination: 'emails', payload: 'b' },
    ]);

    // Inbox: three handled by `billing` (one delivered twice), one dead-lettered
    // NON_RETRIABLE and two MAX_ATTEMPTS by `shipping`.
    const billing = createInbox({ store, consumer: 'billing' });
    const twice = freshId();
    await billing.process(envelope(twice), handled);
    for (let i = 0; i < 2; i += 1) await billing.process(envelope(freshId()), handled);
    expect((await billing.process(envelope(twice), handled)).status).toBe('duplicate');
    const shipping = createInbox({ store, consumer: 'shipping', maxAttempts: 1 });
    await shipping.process(envelope(freshId()), () => {
      throw new FinalError('no such order');
    });
    for (let i = 0; i < 2; i += 1) {
      await shipping.process(envelope(freshId()), () => Promise.reject(new Error('down')));
    }
    await Promise.all([billing.flushActivity(), shipping.flushActivity()]);

    // Operations: one completed with a 1 ms retention (so expired), one held past a short
    // lease by an owner that never finishes, one held within a long lease.
    const charge = createOperations({ store, operation: 'charge' });
    await charge.run('done-1', { a: 1 }, () => Promise.resolve('ok'), { retentionMs: 1 });
    const dying = createOperations({ store, operation: 'charge', leaseMs: 20 });
    expect((await dying.reserve('stuck-1', { a: 2 })).kind).toBe('acquired');
    const slow = createOperations({ store, operation: 'refund', leaseMs: 600_000 });
    expect((await slow.reserve('busy-1', { a: 3 })).kind).toBe('acquired');
    await sleep(50);

    const status = await admin.status();
    expect(status.outbox).toEqual([
      { destination: 'emails', pending: 2, oldestPendingSeconds: expect.any(Number), dead: 0 },
      { destination: 'orders', pending: 0, oldestPendingSeconds: null, dead: 1 },
    ]);
    expect(status.outbox[0]!.oldestPendingSeconds).toBeGreaterThanOrEqual(0);
    expect(status.deadLetters).toEqual([
      { consumer: 'shipping', reason: 'MAX_ATTEMPTS', count: 2, newestAt: expect.any(Date) },
      { consumer: 'shipping', reason: 'NON_RETRIABLE', count: 1, newestAt: expect.any(Date) },
    ]);
    expect(status.consumers).toEqual([
      { name: 'billing', handledLastHour: 3, duplicatesLastHour: 1, deadLetteredLastHour: 0 },
      { name: 'charge', handledLastHour: 1, duplicatesLastHour: 0, deadLetteredLastHour: 0 },
      { name: 'shipping', handledLastHour: 0, duplicatesLastHour: 0, deadLetteredLastHour: 3 },
    ]);
    expect(status.operations).toEqual([
      { operation: 'charge', inProgress: 0, pastLease: 1 },
      { operation: 'refund', inProgress: 1, pastLease: 0 },
    ]);
    expect(status.retention).toEqual({
      expiredDedupRecords: 1,
      publishedOutboxRows: 2,
      countLimit: 100_000,
    });
  });

  it('outbox: lists, gets, requeues and deletes dead and stuck events', async () => {
    const publisher = createMemoryPublisher();
    publisher.failKey('bad', { retriable: false, message: 'broker says no' });
    const [deadId] = await add({ destination: 'o-list', key: 'bad', payload: { x: 1 } });
    await drain(createRelay({ store, publisher, onPublished: 'keep' }));
    const [pendingId] = await add({ destination: 'o-list', key: 'later', payload: 'p' });

    const dead = await admin.outbox.list({ destination: 'o-list' });
    expect(dead).toHaveLength(1);
    expect(dead[0]).toMatchObject({
      destination: 'o-list',
      key: 'bad',
      messageId: deadId,
      status: 'dead',
      attempts: 1,
    });
    expect(dead[0]!.lastError).toContain('broker says no');
    expect(JSON.parse(Buffer.from(dead[0]!.payload).toString())).toEqual({ x: 1 });
    expect(await admin.outbox.get(dead[0]!.id)).toEqual(dead[0]);
    expect(await admin.outbox.get('999999999')).toBeUndefined();

    const pending = await admin.outbox.list({ destination: 'o-list', status: 'pending' });
    expect(pending.map((e) => e.messageId)).toEqual([pendingId]);
    expect(await admin.outbox.list({ destination: 'o-list', status: 'stuck' })).toEqual([]);
    const stuck = await admin.outbox.list({
      destination: 'o-list',
      status: 'stuck',
      stuckAfterMs: 0,
    });
    expect(stuck.map((e) => e.messageId)).toEqual([pendingId]);
    expect(
      await admin.outbox.list({ destination: 'o-list', status: 'pending', ids: ['1'] }),
    ).toEqual([]);
    expect(
      await admin.outbox.list({ destination: 'o-list', since: new Date(Date.now() + 60_000) }),
    ).toEqual([]);

    const newId = await admin.outbox.requeue(dead[0]!.id);
    expect(newId).not.toBeNull();
    expect(await admin.outbox.requeue(dead[0]!.id)).toBeNull();
    expect(await admin.outbox.get(newId!)).toMatchObject({
      status: 'pending',
      attempts: 0,
      messageId: deadId,
    });
    expect(await admin.outbox.delete(newId!)).toBe(true);
    expect(await admin.outbox.delete(newId!)).toBe(false);
    expect(await admin.outbox.get(newId!)).toBeUndefined();
  });

  it('operations: lists in-progress and past-lease records, gets and releases them', async () => {
    const dying = createOperations({ store, operation: 'ops-pay', leaseMs: 20 });
    const holding = createOperations({ store, operation: 'ops-pay', leaseMs: 600_000 });
    const gone = await dying.reserve('gone', { v: 1 });
    expect(gone.kind).toBe('acquired');
    expect((await holding.reserve('held', { v: 2 })).kind).toBe('acquired');
    await sleep(50);

    const all = await admin.operations.list({ operation: 'ops-pay' });
    expect(all.map((r) => [r.key, r.pastLease])).toEqual([
      ['gone', true],
      ['held', false],
    ]);
    const past = await admin.operations.list({ operation: 'ops-pay', state: 'past-lease' });
    expect(past.map((r) => r.key)).toEqual(['gone']);
    expect(past[0]).toMatchObject({
      scope: 'default',
      operation: 'ops-pay',
      status: 'IN_PROGRESS',
      attempts: 1,
    });
    expect(past[0]!.ownerId).toEqual(expect.any(String));
    expect(past[0]!.requestHash).toMatch(/^[0-9a-f]{64}$/);

    // Within its lease a record is released only with force.
    expect(await admin.operations.release({ operation: 'ops-pay', key: 'held' })).toBe(false);
    expect(
      await admin.operations.release({ operation: 'ops-pay', key: 'held' }, { force: true }),
    ).toBe(true);
    expect(await admin.operations.release({ operation: 'ops-pay', key: 'gone' })).toBe(true);
    expect(await admin.operations.release({ operation: 'ops-pay', key: 'gone' })).toBe(false);
    expect(await admin.operations.get({ operation: 'ops-pay', key: 'gone' })).toMatchObject({
      status: 'FAILED_RETRIABLE',
      ownerId: null,
      leaseUntil: null,
      pastLease: false,
      error: { code: 'RELEASED' },
    });
    expect(await admin.operations.list({ operation: 'ops-pay' })).toEqual([]);
    expect(await admin.operations.get({ operation: 'ops-pay', key: 'nope' })).toBeUndefined();
  });

  it('cleanup: runs retention and the published rows cleanup, reporting every batch', async () => {
    const ops = createOperations({ store, operation: 'cleanup-op' });
    await ops.run('old', { v: 1 }, () => Promise.resolve(1), { retentionMs: 1 });
    await add({ destination: 'cleanup-dest', payload: 1 });
    await drain(createRelay({ store, publisher: createMemoryPublisher(), onPublished: 'keep' }));
    await sleep(20);
    const publishedBefore = (await admin.status()).retention.publishedOutboxRows;
    expect(publishedBefore).toBeGreaterThan(0);

    const batches: { table: string; deleted: number }[] = [];
    const result = await admin.cleanup({
      retentionMs: 1,
      publishedOutboxMs: 0,
      batchSize: 2,
      onBatch: (batch) => batches.push(batch),
    });
    expect(result.outboxDeleted).toBe(publishedBefore);
    expect(result.tables.idempotency.deleted).toBeGreaterThanOrEqual(1);
    expect(result.deleted).toBe(
      result.outboxDeleted +
        result.tables.idempotency.deleted +
        result.tables.inbox_records.deleted +
        result.tables.inbox_attempts.deleted +
        result.tables.dead_letters.deleted +
        result.tables.consumer_activity.deleted,
    );
    expect(result.tables.dead_letters.skipped).toBe('disabled');
    expect(batches.filter((b) => b.table === 'outbox').reduce((n, b) => n + b.deleted, 0)).toBe(
      publishedBefore,
    );
    expect(batches.some((b) => b.table === 'idempotency')).toBe(true);
    expect((await admin.status()).retention.publishedOutboxRows).toBe(0);
    expect(await admin.operations.get({ operation: 'cleanup-op', key: 'old' })).toBeUndefined();
  });

  it('says the schema is not migrated instead of a driver error', async () => {
    const bare = await createStore(
      kind === 'pglite'
        ? { pglite: {}, schema: 'bare' }
        : {
            connectionString: kind === 'mysql' ? mysqlUrl() : databaseUrl(),
            schema: uniqueSchema('bare'),
          },
    );
    try {
      const error = await createAdmin(bare)
        .status()
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ConfigurationError);
      expect((error as Error).message).toMatch(/has no justonce tables: run the migrations/);
      await expect(createAdmin(bare).outbox.list()).rejects.toBeInstanceOf(ConfigurationError);
    } finally {
      await bare.close();
    }
  });

  it('logs every change an operator makes, never a payload', async () => {
    const lines: { message: string; fields: Record<string, unknown> }[] = [];
    const record = (message: string, fields: Record<string, unknown> = {}) =>
      lines.push({ message, fields });
    const logged = createAdmin(store, {
      logger: { debug: record, info: record, warn: record, error: record },
    });
    const publisher = createMemoryPublisher();
    publisher.failKey('audit', { retriable: false });
    await add({ destination: 'audit', key: 'audit', payload: { secret: 'card-4242' } });
    await drain(createRelay({ store, publisher, onPublished: 'keep' }));
    const [dead] = await logged.outbox.list({ destination: 'audit' });
    const newId = await logged.outbox.requeue(dead!.id);
    expect(await logged.outbox.delete(newId!)).toBe(true);
    expect(await logged.outbox.delete(newId!)).toBe(false);
    const ops = createOperations({ store, operation: 'audit-op', leaseMs: 600_000 });
    await ops.reserve('k', { v: 1 });
    await logged.operations.release({ operation: 'audit-op', key: 'k' }, { force: true });
    expect(lines).toEqual([
      { message: 'admin: outbox event requeued', fields: { id: dead!.id, newId } },
      { message: 'admin: outbox event deleted', fields: { id: newId } },
      {
        message: 'admin: operation record released',
        fields: { scope: 'default', operation: 'audit-op', key: 'k', force: true },
      },
    ]);
    expect(JSON.stringify(lines)).not.toContain('card-4242');
  });

  it('refuses bad arguments with ConfigurationError, before any change', async () => {
    const invalid = async (call: () => Promise<unknown>, message: RegExp) => {
      const error = await call().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(ConfigurationError);
      expect((error as Error).message).toMatch(message);
    };
    const rowsBefore = await countRows(store, 'outbox');
    await invalid(() => admin.outbox.get('12abc'), /id must be a row id/);
    await invalid(() => admin.outbox.get('-1'), /id must be a row id/);
    await invalid(() => admin.outbox.requeue('99999999999999999999'), /id must be a row id/);
    await invalid(() => admin.outbox.delete(''), /id must be a row id/);
    await invalid(() => admin.outbox.list({ limit: 0 }), /limit must be an integer/);
    await invalid(() => admin.outbox.list({ limit: 1001 }), /limit must be an integer/);
    await invalid(
      () => admin.outbox.list({ status: 'gone' as 'dead' }),
      /status must be one of dead, pending, stuck/,
    );
    await invalid(
      () => admin.outbox.list({ since: new Date('nope') }),
      /since must be a valid Date/,
    );
    await invalid(() => admin.outbox.list({ ids: ['1', 'x'] }), /ids\[\] must be a row id/);
    await invalid(() => admin.outbox.list({ after: '0' }), /after must be a row id/);
    await invalid(
      () => admin.outbox.list({ destinaton: 'x' } as never),
      /unknown option `destinaton`; did you mean `destination`\?/,
    );
    await invalid(
      () => admin.operations.list({ state: 'stuck' as 'in-progress' }),
      /state must be one of in-progress, past-lease/,
    );
    await invalid(
      () => admin.operations.get({ operation: 'x', key: 'a\u0000b' }),
      /key contains U\+0000/,
    );
    await invalid(() => admin.operations.release({ key: 'k' } as never), /operation/);
    await invalid(
      () => admin.operations.release({ operation: 'x', key: 'k' }, { forse: true } as never),
      /unknown option `forse`/,
    );
    await invalid(() => admin.cleanup({ batchSize: 0 }), /batchSize must be an integer/);
    await invalid(() => admin.cleanup({ retentionMs: -1 }), /retentionMs/);
    await invalid(() => admin.cleanup({ retain: 1 } as never), /unknown option `retain`/);
    expect(() => createAdmin(store, { verbose: true } as never)).toThrow(
      /createAdmin: unknown option `verbose`/,
    );
    expect(() => createAdmin(undefined as never)).toThrow(ConfigurationError);
    expect(() => createAdmin(store, { logger: {} as never })).toThrow(/logger must have/);
    expect(await countRows(store, 'outbox')).toBe(rowsBefore);
    const notFound = await admin.redeliverDeadLetter('nope').catch((e: unknown) => e);
    expect(hasErrorCode(notFound, 'DEAD_LETTER_NOT_FOUND')).toBe(true);
  });
});
