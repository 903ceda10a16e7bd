/**
 * What is MySQL's own in the inbox and its dead letters: the keys compare byte for byte (no
 * case folding, no trailing-space padding), 4-byte UTF-8 ids round-trip, an id limit the
 * MySQL key cannot hold is refused, and a transaction a failure ended is never committed.
 */
import {
  ConfigurationError,
  FinalError,
  createDeadLetters,
  createInbox,
  hasErrorCode,
  rowsOf,
  type HandlerContext,
} from '../src';
import { countEffects } from '../../../test-support/effects';
import { envelope, freshId, useEffectsStore } from './fixtures/inbox-support';

describe('inbox on mysql', () => {
  const suite = useEffectsStore('mysql');
  const { effect } = suite;
  const inboxFor = (extra: { maxAttempts?: number } = {}) =>
    createInbox({ store: suite.store, consumer: freshId('my'), ...extra });
  const poison = async (): Promise<never> => {
    throw new Error('poison');
  };

  it('ids that differ only by case are two messages', async () => {
    const inbox = inboxFor();
    const id = freshId('Case');
    const lower = id.toLowerCase();
    expect(await inbox.process(envelope(id), effect)).toMatchObject({ status: 'processed' });
    expect(await inbox.process(envelope(lower), effect)).toMatchObject({ status: 'processed' });
    expect(await inbox.process(envelope(lower), effect)).toMatchObject({ status: 'duplicate' });
    expect(await countEffects(suite.store, id)).toBe(1);
    expect(await countEffects(suite.store, lower)).toBe(1);
  });

  it('ids that differ only by a trailing space are two messages, in a batch too', async () => {
    const inbox = inboxFor();
    const id = freshId('pad');
    const padded = `${id} `;
    expect(await inbox.process(envelope(id), effect)).toMatchObject({ status: 'processed' });
    expect(await inbox.process(envelope(padded), effect)).toMatchObject({ status: 'processed' });
    const other = freshId('pad');
    const outcomes = await inbox.processBatch(
      [envelope(`${other} `), envelope(other), envelope(id)],
      effect,
    );
    expect(outcomes.map((o) => o.status)).toEqual(['processed', 'processed', 'duplicate']);
    expect(await countEffects(suite.store, padded)).toBe(1);
    expect(await countEffects(suite.store, `${other} `)).toBe(1);
  });

  it('dead letters of ids that differ only by a trailing space are two letters', async () => {
    const inbox = inboxFor({ maxAttempts: 1 });
    const id = freshId('dead');
    const first = await inbox.process(envelope(id), poison);
    const second = await inbox.process(envelope(`${id} `), poison);
    expect(first).toMatchObject({ status: 'dead-lettered' });
    expect(second).toMatchObject({ status: 'dead-lettered' });
    if (first.status !== 'dead-lettered' || second.status !== 'dead-lettered') return;
    expect(first.deadLetterId).not.toBe(second.deadLetterId);
    const letters = createDeadLetters(suite.store);
    expect((await letters.get(second.deadLetterId))?.messageId).toBe(`${id} `);
  });

  it('a 4-byte UTF-8 id and scope round-trip through the records and the dead letters', async () => {
    const inbox = inboxFor({ maxAttempts: 1 });
    const id = `${freshId('emoji')}-😀𝄞`;
    const scope = 'tenant-🦄';
    expect(await inbox.process(envelope(id, 'x', { scope }), effect)).toMatchObject({
      status: 'processed',
      messageId: id,
      scope,
    });
    expect(await inbox.process(envelope(id, 'x', { scope }), effect)).toMatchObject({
      status: 'duplicate',
    });
    const stored = rowsOf<{ message_id: string; scope: string }>(
      await suite.store.knex.raw(
        `select message_id, scope from ${suite.store.names.table('inbox_records')}
          where consumer = ?`,
        [inbox.consumer],
      ),
    );
    expect(stored).toEqual([{ message_id: id, scope }]);
    const deadId = `${id}-dead`;
    const dead = await inbox.process(envelope(deadId, 'y', { scope }), poison);
    if (dead.status !== 'dead-lettered') throw new Error(`expected a letter, got ${dead.status}`);
    const letter = await createDeadLetters(suite.store).get(dead.deadLetterId);
    expect(letter).toMatchObject({ messageId: deadId, scope });
  });

  it("a letter keeps an error message and a key past MySQL text's 64 KiB", async () => {
    const inbox = inboxFor();
    const message = 'x'.repeat(70_000);
    const key = 'k'.repeat(70_000);
    const outcome = await inbox.process(envelope(freshId(), 'x', { key }), async () => {
      throw new FinalError(message);
    });
    if (outcome.status !== 'dead-lettered')
      throw new Error(`expected a letter, got ${outcome.status}`);
    const letter = await createDeadLetters(suite.store).get(outcome.deadLetterId);
    expect(letter?.errorMessage).toBe(message);
    expect(letter?.key).toBe(key);
  });

  it('refuses a maxIdLength the MySQL key cannot hold, and takes the widest that fits', () => {
    const make = (maxIdLength: number) =>
      createInbox({ store: suite.store, consumer: 'limits', maxIdLength });
    expect(() => make(256)).toThrow(ConfigurationError);
    expect(() => make(256)).toThrow(/MySQL/);
    expect(make(255).consumer).toBe('limits');
  });

  it('a batch beside a dead-lettered message claims the others one by one', async () => {
    const inbox = inboxFor({ maxAttempts: 1 });
    const dead = freshId('dead');
    expect(await inbox.process(envelope(dead), poison)).toMatchObject({
      status: 'dead-lettered',
    });
    const [a, b] = [freshId('a'), freshId('b')];
    const outcomes = await inbox.processBatch([envelope(a), envelope(dead), envelope(b)], effect);
    expect(outcomes.map((o) => o.status)).toEqual(['processed', 'dead-lettered', 'processed']);
    expect(await countEffects(suite.store, a)).toBe(1);
    expect(await countEffects(suite.store, b)).toBe(1);
    expect(await countEffects(suite.store, dead)).toBe(0);
  });

  it('a handler whose transaction a failure ended does not commit: the attempt fails', async () => {
    const inbox = inboxFor();
    const id = freshId();
    // As after a deadlock, which rolls the whole transaction back on MySQL: a failed
    // statement, then no transaction any more.
    const outcome = await inbox.process(envelope(id), async (ctx: HandlerContext) => {
      await ctx.trx.raw('select * from no_such_table').catch(() => undefined);
      await ctx.trx.raw('rollback');
    });
    expect(outcome).toMatchObject({ status: 'failed', retriable: true });
    expect(hasErrorCode(outcome.status === 'failed' && outcome.error, 'TRANSACTION_ABORTED')).toBe(
      true,
    );
    expect(await inbox.process(envelope(id), effect)).toMatchObject({ status: 'processed' });
    expect(await countEffects(suite.store, id)).toBe(1);
  });

  it("a deadlock in a batch's isolated pass fails the batch as a collision: nothing charged", async () => {
    const inbox = inboxFor({ maxAttempts: 2 });
    const [a, b] = [freshId('a'), freshId('b')];
    let deadlocks = 2;
    // As a deadlock does on MySQL: the server rolls the whole transaction back, and the
    // statement fails with ER_LOCK_DEADLOCK. Once in the first pass, once in the isolated one.
    const handler = async (ctx: HandlerContext) => {
      await effect(ctx);
      if (ctx.messageId === a && deadlocks > 0) {
        deadlocks -= 1;
        await ctx.trx.raw('rollback');
        throw Object.assign(new Error('Deadlock found when trying to get lock'), {
          code: 'ER_LOCK_DEADLOCK',
          errno: 1213,
        });
      }
    };
    const error = await inbox
      .processBatch([envelope(b), envelope(a)], handler)
      .catch((e: unknown) => e);
    expect(hasErrorCode(error, 'STORE_UNAVAILABLE')).toBe(true);
    expect(await countEffects(suite.store, a)).toBe(0);
    expect(await countEffects(suite.store, b)).toBe(0);
    const outcomes = await inbox.processBatch([envelope(b), envelope(a)], handler);
    expect(outcomes.map((o) => o.status)).toEqual(['processed', 'processed']);
    expect(outcomes.map((o) => (o.status === 'processed' ? o.attempt : 0))).toEqual([1, 1]);
    expect(await countEffects(suite.store, a)).toBe(1);
    expect(await countEffects(suite.store, b)).toBe(1);
  });

  it('a handler that swallows a failed statement commits the rest, as MySQL does', async () => {
    const inbox = inboxFor();
    const id = freshId();
    const outcome = await inbox.process(envelope(id), async (ctx: HandlerContext) => {
      await ctx.trx.raw('select * from no_such_table').catch(() => undefined);
      await effect(ctx);
    });
    expect(outcome).toMatchObject({ status: 'processed' });
    expect(await inbox.process(envelope(id), effect)).toMatchObject({ status: 'duplicate' });
    expect(await countEffects(suite.store, id)).toBe(1);
  });
});
