import {
  ConfigurationError,
  DeadLetterNotFoundError,
  createDeadLetters,
  createInbox,
  hasErrorCode,
  rowsOf,
  type HandlerContext,
  type InboxOptions,
} from '../src';
import { ALL_STORE_KINDS, openTestStore } from './db';
import { envelope, freshId } from './fixtures/inbox-support';
import { countEffects, createEffectsTable, writeEffect } from '../../../test-support/effects';

type TestStore = Awaited<ReturnType<typeof openTestStore>>;

describe.each(ALL_STORE_KINDS)('dead letters on %s', (kind) => {
  let store: TestStore;

  beforeAll(async () => {
    store = await openTestStore(kind);
    await createEffectsTable(store);
  });
  afterAll(async () => {
    await store.dispose();
  });

  const inboxFor = (extra: Partial<InboxOptions> = {}) =>
    createInbox({ store, consumer: freshId('dl'), ...extra });
  const effect = async (ctx: HandlerContext) => {
    await writeEffect(ctx.trx, store, ctx.messageId, { scope: ctx.scope });
  };
  const poison = async () => {
    throw new Error('always fails');
  };

  it('pages in numeric id order past id 9 (ids are not sorted as text)', async () => {
    const inbox = inboxFor();
    for (let i = 0; i < 12; i += 1) await inbox.process(envelope(undefined, `b${i}`), effect);
    const letters = createDeadLetters(store);
    const seen: string[] = [];
    let after: string | undefined;
    for (let page = 0; page < 10; page += 1) {
      const batch = await letters.list({ consumer: inbox.consumer, limit: 5, after });
      if (batch.length === 0) break;
      seen.push(...batch.map((l) => l.id));
      after = batch.at(-1)?.id;
    }
    expect(seen).toHaveLength(12);
    expect(new Set(seen).size).toBe(12);
    expect(seen.map(Number)).toEqual([...seen.map(Number)].sort((a, b) => a - b));
  });

  it('lists, filters and pages letters, and gets one with everything that was delivered', async () => {
    const inbox = inboxFor({ maxAttempts: 1 });
    const other = inboxFor({ maxAttempts: 1 });
    const ids = [freshId(), freshId(), freshId()];
    const receivedAt = new Date('2024-05-01T10:00:00.000Z');
    for (const id of ids) {
      await inbox.process(
        envelope(id, new Uint8Array([0, 1, 2, 255]), {
          scope: 'tenant-1',
          key: 'pk-1',
          headers: { 'x-h': id },
          delivery: { source: 'orders', partition: 3, offset: '42', receivedAt },
        }),
        poison,
      );
    }
    await other.process(envelope(freshId(), 'text body'), poison);
    const deadLetters = createDeadLetters(store);

    const all = await deadLetters.list({ consumer: inbox.consumer });
    expect(all.map((l) => l.messageId)).toEqual(ids);
    const first = all[0]!;
    expect(first).toMatchObject({
      scope: 'tenant-1',
      consumer: inbox.consumer,
      reason: 'MAX_ATTEMPTS',
      errorCode: 'MAX_ATTEMPTS',
      attempts: 1,
      key: 'pk-1',
      headers: { 'x-h': ids[0] },
      delivery: { source: 'orders', partition: 3, offset: '42', receivedAt },
      requeuedAt: null,
    });
    expect(first.errorMessage).toContain('always fails');
    expect(first.body).toEqual(new Uint8Array([0, 1, 2, 255]));
    expect(first.deadAt).toBeInstanceOf(Date);
    expect(first.fingerprint).toMatch(/^[0-9a-f]{64}$/);

    const page1 = await deadLetters.list({ consumer: inbox.consumer, limit: 2 });
    const page2 = await deadLetters.list({
      consumer: inbox.consumer,
      limit: 2,
      after: page1[1]!.id,
    });
    expect([...page1, ...page2].map((l) => l.id)).toEqual(all.map((l) => l.id));
    expect(await deadLetters.list({ consumer: inbox.consumer, scope: 'nope' })).toEqual([]);
    expect(
      (await deadLetters.list({ consumer: other.consumer, reason: 'MAX_ATTEMPTS' }))[0]?.body,
    ).toBe('text body');

    expect(await deadLetters.get(first.id)).toEqual(first);
    expect(await deadLetters.get('999999999')).toBeUndefined();
    expect(await deadLetters.get('not-an-id')).toBeUndefined();
  });

  it("keeps the delivery's broker position with the letter and in the outcome, each field of its own type", async () => {
    const inbox = inboxFor({ maxAttempts: 1 });
    const id = freshId();
    const position = { topic: 'orders', partition: 3, offset: '42' };
    const outcome = await inbox.process(envelope(id, 'b', { delivery: { position } }), poison);
    expect(outcome).toMatchObject({ status: 'dead-lettered', position });
    const letters = createDeadLetters(store);
    const letter = (await letters.list({ consumer: inbox.consumer }))[0]!;
    expect(letter.delivery.position).toEqual(position);

    // Bad input keeps it too; a field of the wrong type is left out, text is made storable.
    const odd = {
      queue: 'q\u0000',
      brokerMessageId: 7,
      partition: 1.5,
      exchange: '',
      routingKey: 'rk',
      extra: 'x',
    };
    const bad = await inbox.process(
      envelope(undefined, 'b', { delivery: { position: odd as never } }),
      poison,
    );
    expect(bad).toMatchObject({ reason: 'MISSING_MESSAGE_ID' });
    const kept = bad.status === 'dead-lettered' ? await letters.get(bad.deadLetterId) : undefined;
    expect(kept?.delivery.position).toEqual({ queue: 'q\\u0000', exchange: '', routingKey: 'rk' });
    const none = await inbox.process(
      envelope(undefined, 'b', { delivery: { position: { partition: '2' } as never } }),
      poison,
    );
    expect(none).not.toHaveProperty('position');

    // A requeued envelope is a new delivery: its old position does not come back.
    expect((await letters.requeue(letter.id)).delivery).not.toHaveProperty('position');
  });

  it('requeue makes the message processable again, and it then processes once', async () => {
    const inbox = inboxFor({ maxAttempts: 2 });
    const id = freshId();
    let healthy = false;
    const handler = async (ctx: HandlerContext) => {
      if (!healthy) throw new Error('dependency down');
      await effect(ctx);
    };
    expect(
      (await inbox.process(envelope(id, 'b', { delivery: { receiveCount: 1 } }), handler)).status,
    ).toBe('failed');
    const dead = await inbox.process(envelope(id, 'b', { delivery: { receiveCount: 2 } }), handler);
    expect(dead).toMatchObject({ status: 'dead-lettered', reason: 'MAX_ATTEMPTS' });
    const letterId = dead.status === 'dead-lettered' ? dead.deadLetterId : '';
    healthy = true;
    // While dead-lettered, redeliveries do not run the handler.
    expect((await inbox.process(envelope(id, 'b'), handler)).status).toBe('dead-lettered');
    expect(await countEffects(store, id)).toBe(0);

    const deadLetters = createDeadLetters(store);
    const requeued = await deadLetters.requeue(letterId);
    expect(requeued).toEqual({ id, scope: 'default', headers: {}, body: 'b', delivery: {} });
    expect((await deadLetters.get(letterId))?.requeuedAt).toBeInstanceOf(Date);
    expect(await deadLetters.list({ consumer: inbox.consumer, includeRequeued: false })).toEqual(
      [],
    );

    const outcome = await inbox.process(requeued, handler);
    expect(outcome).toMatchObject({ status: 'processed', attempt: 1 });
    expect((await inbox.process(requeued, handler)).status).toBe('duplicate');
    expect(await countEffects(store, id)).toBe(1);
  });

  it('dead-lettering the same message again after a requeue re-arms the same letter', async () => {
    const inbox = inboxFor({ maxAttempts: 1 });
    const id = freshId();
    const first = await inbox.process(envelope(id), poison);
    const deadLetters = createDeadLetters(store);
    const letterId = first.status === 'dead-lettered' ? first.deadLetterId : '';
    await deadLetters.requeue(letterId);
    const second = await inbox.process(envelope(id), poison);
    expect(second).toMatchObject({ status: 'dead-lettered', deadLetterId: letterId });
    const letters = await deadLetters.list({ consumer: inbox.consumer });
    expect(letters).toHaveLength(1);
    expect(letters[0]?.requeuedAt).toBeNull();
  });

  it('racing deliveries that both dead-letter one message leave one letter', async () => {
    const inbox = inboxFor({ maxAttempts: 3 });
    const id = freshId();
    const outcomes = await Promise.all(
      Array.from({ length: 8 }, () =>
        inbox.process(envelope(id, 'b', { delivery: { receiveCount: 7 } }), effect),
      ),
    );
    expect(outcomes.every((o) => o.status === 'dead-lettered')).toBe(true);
    const ids = new Set(outcomes.map((o) => (o.status === 'dead-lettered' ? o.deadLetterId : '')));
    expect(ids.size).toBe(1);
    expect(await createDeadLetters(store).list({ consumer: inbox.consumer })).toHaveLength(1);
  });

  it('a payload-conflict letter keeps the original: requeued, it is a conflict again', async () => {
    const inbox = inboxFor();
    const id = freshId();
    await inbox.process(envelope(id, 'original'), effect);
    const conflict = await inbox.process(envelope(id, 'impostor'), effect);
    expect(conflict).toMatchObject({ status: 'dead-lettered', reason: 'PAYLOAD_CONFLICT' });
    const deadLetters = createDeadLetters(store);
    const letterId = conflict.status === 'dead-lettered' ? conflict.deadLetterId : '';
    const requeued = await deadLetters.requeue(letterId);
    expect(requeued.body).toBe('impostor');
    expect(await inbox.process(requeued, effect)).toMatchObject({
      status: 'dead-lettered',
      reason: 'PAYLOAD_CONFLICT',
      deadLetterId: letterId,
    });
    expect((await inbox.process(envelope(id, 'original'), effect)).status).toBe('duplicate');
    expect(await countEffects(store, id)).toBe(1);
  });

  it('a letter without a message id can be requeued and comes back as it was', async () => {
    const inbox = inboxFor();
    const outcome = await inbox.process(
      envelope(undefined, 'orphan', { headers: { a: 'b' }, key: 'k' }),
      effect,
    );
    const letterId = outcome.status === 'dead-lettered' ? outcome.deadLetterId : '';
    const requeued = await createDeadLetters(store).requeue(letterId);
    expect(requeued).toEqual({
      id: undefined,
      scope: 'default',
      key: 'k',
      headers: { a: 'b' },
      body: 'orphan',
      delivery: {},
    });
  });

  it('delete removes a letter for good; the message stays acknowledged', async () => {
    const inbox = inboxFor({ maxAttempts: 1 });
    const id = freshId();
    const dead = await inbox.process(envelope(id), poison);
    const letterId = dead.status === 'dead-lettered' ? dead.deadLetterId : '';
    const deadLetters = createDeadLetters(store);
    expect(await deadLetters.delete(letterId)).toBe(true);
    expect(await deadLetters.delete(letterId)).toBe(false);
    expect(await deadLetters.get(letterId)).toBeUndefined();
    let ran = false;
    const again = await inbox.process(envelope(id), async () => {
      ran = true;
    });
    expect(again.status).toBe('duplicate');
    expect(ran).toBe(false);
  });

  it('requeue of an unknown letter is a typed error; bad list options are refused', async () => {
    const deadLetters = createDeadLetters(store);
    await expect(deadLetters.requeue('123456789')).rejects.toBeInstanceOf(DeadLetterNotFoundError);
    const error: unknown = await deadLetters.requeue('x').catch((e: unknown) => e);
    expect(hasErrorCode(error, 'DEAD_LETTER_NOT_FOUND')).toBe(true);
    await expect(deadLetters.list({ limit: 0 })).rejects.toBeInstanceOf(ConfigurationError);
    await expect(deadLetters.list({ after: 'abc' })).rejects.toBeInstanceOf(ConfigurationError);
  });

  it('filters by time range and by ids; refuses bad filters before any SQL', async () => {
    const inbox = inboxFor();
    for (let i = 0; i < 4; i += 1) await inbox.process(envelope(undefined, `t${i}`), effect);
    const deadLetters = createDeadLetters(store);
    const all = await deadLetters.list({ consumer: inbox.consumer });
    expect(all).toHaveLength(4);
    const [first, second] = all;
    const byIds = await deadLetters.list({ ids: [first!.id, second!.id, '999999999'] });
    expect(byIds.map((l) => l.id)).toEqual([first!.id, second!.id]);

    const after = new Date(all.at(-1)!.deadAt.getTime() + 1);
    const before = new Date(first!.deadAt.getTime());
    expect(await deadLetters.list({ consumer: inbox.consumer, since: after })).toEqual([]);
    expect(await deadLetters.list({ consumer: inbox.consumer, until: before })).toEqual([]);
    expect(
      await deadLetters.list({ consumer: inbox.consumer, since: before, until: after }),
    ).toHaveLength(4);

    for (const bad of [
      { since: new Date('nope') },
      { until: '2024-01-01' },
      { ids: ['1', 'x'] },
      { ids: '1' },
      { consumer: 'a\u0000b' },
      { consumre: 'typo' },
    ]) {
      await expect(deadLetters.list(bad as never)).rejects.toBeInstanceOf(ConfigurationError);
    }
  });

  it('requeue clears the attempt counter too', async () => {
    const inbox = inboxFor({ maxAttempts: 1 });
    const id = freshId();
    const dead = await inbox.process(envelope(id), poison);
    const letterId = dead.status === 'dead-lettered' ? dead.deadLetterId : '';
    await store.knex.raw(
      `insert into ${store.names.table('inbox_attempts')} (scope, consumer, message_id, attempts)
       values ('default', ?, ?, 9)`,
      [inbox.consumer, id],
    );
    await createDeadLetters(store).requeue(letterId);
    const rows = rowsOf(
      await store.knex.raw(
        `select 1 from ${store.names.table('inbox_attempts')} where consumer = ? and message_id = ?`,
        [inbox.consumer, id],
      ),
    );
    expect(rows).toEqual([]);
  });
});

describe('createDeadLetters configuration', () => {
  it('refuses something that is not a store', () => {
    expect(() => createDeadLetters({} as never)).toThrow(ConfigurationError);
  });
});
