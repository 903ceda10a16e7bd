import { createInbox, rowsOf, type Inbox, type InboxOutcome } from '../src';
import { ALL_STORE_KINDS } from './db';
import { envelope, freshId, useEffectsStore } from './fixtures/inbox-support';
import { countEffects } from '../../../test-support/effects';

/**
 * Holds the first delivery that reaches `attempt-counted` until `release()`: the copies
 * counted meanwhile find the count past `maxAttempts` with no dedup record to wait on.
 */
function holdFirstCount() {
  let release = (): void => undefined;
  const held = new Promise<void>((resolve) => (release = resolve));
  let counted = (): void => undefined;
  const firstCounted = new Promise<void>((resolve) => (counted = resolve));
  let holding = true;
  const onStep = async (step: string): Promise<void> => {
    if (step !== 'attempt-counted' || !holding) return;
    holding = false;
    counted();
    await held;
  };
  return { onStep, firstCounted, release };
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

function expectRefused(outcomes: readonly InboxOutcome<unknown>[]): void {
  for (const outcome of outcomes) {
    expect(outcome).toMatchObject({
      status: 'failed',
      retriable: true,
      error: { code: 'CONCURRENT_DELIVERY' },
    });
  }
}

describe.each(ALL_STORE_KINDS)('inbox copies delivered at the same time on %s', (kind) => {
  const suite = useEffectsStore(kind);
  const { effect } = suite;

  /**
   * A new message's first copy, started by `start` on an inbox of one attempt, counted and
   * then held until `release()`.
   */
  async function firstCopyHeld<T>(start: (inbox: Inbox, id: string) => Promise<T>) {
    const hold = holdFirstCount();
    const inbox = createInbox({
      store: suite.store,
      consumer: freshId('concurrent'),
      maxAttempts: 1,
      onStep: hold.onStep,
    });
    const id = freshId();
    const first = start(inbox, id);
    await hold.firstCounted;
    return { inbox, id, first, release: hold.release };
  }

  async function hasCounter(consumer: string, messageId: string): Promise<boolean> {
    const result = await suite.store.knex.raw(
      `select 1 from ${suite.store.names.table('inbox_attempts')} where consumer = ? and message_id = ?`,
      [consumer, messageId],
    );
    return rowsOf(result).length > 0;
  }

  it('copies refused while the first ran are all duplicates on their first redelivery, redelivered at once', async () => {
    const { inbox, id, first, release } = await firstCopyHeld((target, messageId) =>
      target.process(envelope(messageId), effect),
    );
    const refused = await Promise.all(
      Array.from({ length: 8 }, () => inbox.process(envelope(id), effect)),
    );
    release();
    expect(await first).toMatchObject({ status: 'processed' });
    expectRefused(refused);

    // The first copy has committed: every redelivery is a duplicate whatever the count,
    // however many arrive together.
    const again = await Promise.all(refused.map(() => inbox.process(envelope(id), effect)));
    expect(again.map((o) => o.status)).toEqual(refused.map(() => 'duplicate'));
    expect(await countEffects(suite.store, id)).toBe(1);
    // Known duplicates write nothing: no counter is left behind.
    expect(await hasCounter(inbox.consumer, id)).toBe(false);
  });

  it('in batch mode too, refused copies are duplicates on their first redelivery', async () => {
    const { inbox, id, first, release } = await firstCopyHeld((target, messageId) =>
      target.processBatch([envelope(messageId)], effect),
    );
    const copies = await Promise.all(
      Array.from({ length: 6 }, () => inbox.processBatch([envelope(id)], effect)),
    );
    release();
    expect((await first).map((o) => o.status)).toEqual(['processed']);
    const refused = copies.flat();
    expect(refused).toHaveLength(6);
    expectRefused(refused);

    const again = await Promise.all(refused.map(() => inbox.processBatch([envelope(id)], effect)));
    expect(again.flat().map((o) => o.status)).toEqual(refused.map(() => 'duplicate'));
    // A batch of several messages counts them in one statement: the handled one is a
    // duplicate there as well, and its batch-mate runs.
    const fresh = freshId();
    const mixed = await inbox.processBatch([envelope(id), envelope(fresh)], effect);
    expect(mixed.map((o) => o.status)).toEqual(['duplicate', 'processed']);
    expect(await countEffects(suite.store, id)).toBe(1);
    expect(await countEffects(suite.store, fresh)).toBe(1);
    expect(await hasCounter(inbox.consumer, id)).toBe(false);
  });

  it('a refused copy is told to come back after a jittered delay of 750 to 1250 ms', async () => {
    const { inbox, id, first, release } = await firstCopyHeld((target, messageId) =>
      target.process(envelope(messageId), effect),
    );
    const copies = await Promise.all(
      Array.from({ length: 8 }, () => inbox.process(envelope(id), effect)),
    );
    release();
    await first;
    expectRefused(copies);
    const delays = copies.map((o) => (o.status === 'failed' ? o.retryDelayMs : -1));
    for (const delay of delays) {
      expect(delay).toBeGreaterThanOrEqual(750);
      expect(delay).toBeLessThanOrEqual(1250);
    }
    expect(new Set(delays).size).toBeGreaterThan(1);
  });

  it('a refused copy does not extend the window: a second after the last attempt that went ahead, refusals stop', async () => {
    // The first copy is counted, then stalls before its transaction (a slow pool checkout).
    const { inbox, id, first, release } = await firstCopyHeld((target, messageId) =>
      target.process(envelope(messageId), effect),
    );
    const countedAt = Date.now();
    expectRefused([await inbox.process(envelope(id), effect)]);
    await sleep(600);
    // Still within a second of the first count: refused (or, on a slow machine, past it).
    await inbox.process(envelope(id), effect);
    await sleep(Math.max(0, countedAt + 1300 - Date.now()));
    // Past a second after the first copy's count: the refused copies counted since then do
    // not keep the message "in flight", so this copy is not refused again.
    const late = await inbox.process(envelope(id), effect);
    expect(late).toMatchObject({ status: 'dead-lettered', reason: 'MAX_ATTEMPTS' });
    release();
    const held = await first;
    expect(held).toMatchObject({
      status: 'dead-lettered',
      deadLetterId: late.status === 'dead-lettered' ? late.deadLetterId : 'none',
    });
    expect(await countEffects(suite.store, id)).toBe(0);
  });
});
