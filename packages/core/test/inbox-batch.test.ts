import { FinalError, createInbox, rowsOf, type HandlerContext, type InboxOptions } from '../src';
import { ALL_STORE_KINDS, openTestStore } from './db';
import { envelope, freshId } from './fixtures/inbox-support';
import { countEffects, createEffectsTable, writeEffect } from '../../../test-support/effects';

type TestStore = Awaited<ReturnType<typeof openTestStore>>;

describe.each(ALL_STORE_KINDS)('inbox batch mode on %s', (kind) => {
  let store: TestStore;

  beforeAll(async () => {
    store = await openTestStore(kind);
    await createEffectsTable(store);
  });
  afterAll(async () => {
    await store.dispose();
  });

  const inboxFor = (extra: Partial<InboxOptions> = {}) =>
    createInbox({ store, consumer: freshId('batch'), ...extra });

  /** A handler that writes the effect and records the transaction it ran in. */
  function recorder() {
    const txids = new Set<string>();
    const ran: string[] = [];
    const handler = async (ctx: HandlerContext) => {
      ran.push(ctx.messageId);
      const row = rowsOf<{ txid: string }>(
        await ctx.trx.raw(
          kind === 'mysql'
            ? `select cast(trx_id as char) as txid from information_schema.innodb_trx
                where trx_mysql_thread_id = connection_id()`
            : 'select txid_current()::text as txid',
        ),
      )[0];
      if (row) txids.add(row.txid);
      await writeEffect(ctx.trx, store, ctx.messageId, { scope: ctx.scope });
      return ctx.messageId;
    };
    return { handler, txids, ran };
  }

  it('handles many new messages in one transaction, outcomes in input order', async () => {
    const inbox = inboxFor();
    const ids = Array.from({ length: 20 }, () => freshId());
    const { handler, txids } = recorder();
    const outcomes = await inbox.processBatch(
      ids.map((id) => envelope(id)),
      handler,
    );
    expect(outcomes.map((o) => o.status)).toEqual(ids.map(() => 'processed'));
    expect(outcomes.map((o) => o.messageId)).toEqual(ids);
    expect(outcomes.map((o) => (o.status === 'processed' ? o.result : undefined))).toEqual(ids);
    expect(txids.size).toBe(1);
    for (const id of ids) expect(await countEffects(store, id)).toBe(1);
  });

  it('calls the handler in delivery order, not in id order', async () => {
    const inbox = inboxFor();
    const base = freshId('order');
    // Ids whose lexical order is the reverse of their delivery order.
    const ids = ['9', '7', '5', '3', '1'].map((n) => `${base}-${n}`);
    const { handler, ran } = recorder();
    const outcomes = await inbox.processBatch(
      ids.map((id) => envelope(id)),
      handler,
    );
    expect(outcomes.map((o) => o.status)).toEqual(ids.map(() => 'processed'));
    expect(ran).toEqual(ids);
  });

  it('only new ids reach the handler; a repeated id in one batch has one effect', async () => {
    const inbox = inboxFor();
    const [old, fresh] = [freshId(), freshId()];
    await inbox.process(envelope(old), recorder().handler);
    const { handler, ran } = recorder();
    const outcomes = await inbox.processBatch(
      [envelope(old), envelope(fresh), envelope(fresh)],
      handler,
    );
    expect(outcomes.map((o) => o.status)).toEqual(['duplicate', 'processed', 'duplicate']);
    expect(ran).toEqual([fresh]);
    expect(await countEffects(store, old)).toBe(1);
    expect(await countEffects(store, fresh)).toBe(1);
  });

  it('one failing message: the others commit once, the failing one takes the retry path', async () => {
    const inbox = inboxFor({ maxAttempts: 3 });
    const ids = Array.from({ length: 6 }, () => freshId());
    const bad = ids[2]!;
    const calls = new Map<string, number>();
    const handler = async (ctx: HandlerContext) => {
      calls.set(ctx.messageId, (calls.get(ctx.messageId) ?? 0) + 1);
      await writeEffect(ctx.trx, store, ctx.messageId, { scope: ctx.scope });
      if (ctx.messageId === bad) throw new Error('this one fails');
    };
    const outcomes = await inbox.processBatch(
      ids.map((id) => envelope(id)),
      handler,
    );
    expect(outcomes.map((o) => o.status)).toEqual([
      'processed',
      'processed',
      'failed',
      'processed',
      'processed',
      'processed',
    ]);
    expect(outcomes[2]).toMatchObject({ status: 'failed', attempt: 1, retriable: true });
    for (const id of ids) expect(await countEffects(store, id)).toBe(id === bad ? 0 : 1);

    // The redelivered batch: the handled ones are duplicates, the failing one runs again.
    const again = await inbox.processBatch(
      ids.map((id) => envelope(id)),
      async (ctx) => {
        await writeEffect(ctx.trx, store, ctx.messageId, { scope: ctx.scope });
        return 'fixed';
      },
    );
    expect(again.map((o) => o.status)).toEqual([
      'duplicate',
      'duplicate',
      'processed',
      'duplicate',
      'duplicate',
      'duplicate',
    ]);
    expect(again[2]).toMatchObject({ status: 'processed', attempt: 2 });
    for (const id of ids) expect(await countEffects(store, id)).toBe(1);
  });

  it('a final error in a batch dead-letters that message only', async () => {
    const inbox = inboxFor();
    const ids = [freshId(), freshId(), freshId()];
    const outcomes = await inbox.processBatch(
      ids.map((id) => envelope(id)),
      async (ctx) => {
        await writeEffect(ctx.trx, store, ctx.messageId, { scope: ctx.scope });
        if (ctx.messageId === ids[0]) throw new FinalError('never valid');
      },
    );
    expect(outcomes.map((o) => o.status)).toEqual(['dead-lettered', 'processed', 'processed']);
    expect(outcomes[0]).toMatchObject({ reason: 'NON_RETRIABLE' });
    expect(await countEffects(store, ids[0])).toBe(0);
  });

  it('bad input, conflicts and exhausted messages in a batch are settled without the handler', async () => {
    const inbox = inboxFor({ maxAttempts: 2, decode: (b) => JSON.parse(String(b)) as unknown });
    const known = freshId();
    await inbox.process(envelope(known, '{"v":1}'), recorder().handler);
    const good = freshId();
    const { handler, ran } = recorder();
    const outcomes = await inbox.processBatch(
      [
        envelope(undefined, '{}'),
        envelope(freshId(), 'not json'),
        envelope(known, '{"v":2}'),
        envelope(freshId(), '{}', { delivery: { receiveCount: 3 } }),
        envelope(good, '{"v":3}'),
      ],
      handler,
    );
    expect(outcomes.map((o) => (o.status === 'dead-lettered' ? o.reason : o.status))).toEqual([
      'MISSING_MESSAGE_ID',
      'UNDECODABLE_BODY',
      'PAYLOAD_CONFLICT',
      'MAX_ATTEMPTS',
      'processed',
    ]);
    expect(ran).toEqual([good]);
  });

  it('a batch larger than one transaction holds is split and still handles everything once', async () => {
    const inbox = inboxFor();
    const ids = Array.from({ length: 1005 }, () => freshId('big'));
    const outcomes = await inbox.processBatch(
      ids.map((id) => envelope(id, 'b')),
      async (ctx) => ctx.messageId,
    );
    expect(outcomes.filter((o) => o.status === 'processed')).toHaveLength(1005);
    const again = await inbox.processBatch(
      ids.slice(995).map((id) => envelope(id, 'b')),
      async (ctx) => ctx.messageId,
    );
    expect(again.every((o) => o.status === 'duplicate')).toBe(true);
  });

  it('two overlapping batches at once give one effect per id', async () => {
    const inbox = inboxFor();
    const ids = Array.from({ length: 30 }, () => freshId());
    const reversed = [...ids].reverse();
    const handler = async (ctx: HandlerContext) => {
      await writeEffect(ctx.trx, store, ctx.messageId, { scope: ctx.scope });
    };
    const [a, b] = await Promise.all([
      inbox.processBatch(
        ids.map((id) => envelope(id)),
        handler,
      ),
      inbox.processBatch(
        reversed.map((id) => envelope(id)),
        handler,
      ),
    ]);
    const processed = [...a, ...b].filter((o) => o.status === 'processed');
    expect(processed).toHaveLength(30);
    expect(await countEffects(store)).toBeGreaterThanOrEqual(30);
    for (const id of ids) expect(await countEffects(store, id)).toBe(1);
  });
});
