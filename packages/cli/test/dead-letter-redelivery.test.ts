/**
 * `justonce dead-letters requeue | delete` as an operator runs them: on a terminal (a
 * pseudo-terminal), with the confirmation prompt and the progress bar; and a requeued dead
 * letter handled exactly once by a running consumer (consumer and relay in this process, the
 * CLI as a child process).
 */
import { createAdmin, createInbox, createRelay, type Relay } from '@justonce/core';
import { createMemoryBroker, type MemoryBroker } from '@justonce/core/testing';
import { waitFor } from '../../../test-support/wait-for';
import { cliOnTerminal, countRows, snapshot, useSchema } from './cli-process';
import { deadLetters } from './seed';

const db = useSchema('cli_redeliver');
const { inSchema } = db;
const waiting = (consumer: string) =>
  countRows(db.store, 'dead_letters', `consumer = '${consumer}' and requeued_at is null`);

describe('on a terminal', () => {
  beforeAll(() =>
    deadLetters(
      db.store,
      'bulk',
      Array.from({ length: 25 }, (_, i) => `x-${i}`),
      'bulk-q',
    ),
  );

  it('asks before a bulk action; "n" changes nothing, exit 1', async () => {
    const before = await snapshot(db.store);
    const run = await cliOnTerminal(
      ['--schema', db.store.schema, 'dead-letters', 'delete', '--consumer', 'bulk'],
      'n\n',
    );
    expect(run.stdout).toMatch(/delete 25 dead letters\? \[y\/N\]/);
    expect(run.stdout).toMatch(/nothing changed/);
    expect(run.code).toBe(1);
    expect(await snapshot(db.store)).toEqual(before);
  });

  it('"y" requeues them all, with a progress bar on stderr', async () => {
    const run = await cliOnTerminal(
      ['--schema', db.store.schema, 'dead-letters', 'requeue', '--consumer', 'bulk'],
      'y\n',
    );
    expect(run.stdout).toMatch(/requeue 25 dead letters\? \[y\/N\]/);
    expect(run.stdout).toMatch(/requeue \[[=-]+\] \d+\/25/);
    expect(run.stdout).toMatch(/requeued 25 dead letters/);
    expect(run.code).toBe(0);
    expect(await waiting('bulk')).toBe(0);
    expect(await countRows(db.store, 'outbox', `destination = 'bulk-q'`)).toBe(25);
  });
});

describe('a requeued dead letter is handled exactly once by a running consumer', () => {
  let broker: MemoryBroker;
  let relay: Relay;
  afterAll(async () => {
    await relay?.stop();
    await broker?.close();
  });

  it('through the outbox, the relay and the broker', async () => {
    broker = createMemoryBroker({ maxRetryDelayMs: 10 });
    const handled: string[] = [];
    let broken = true;
    const inbox = createInbox({ store: db.store, consumer: 'fulfilment', maxAttempts: 1 });
    await broker
      .consume('fulfilment-q', {
        inbox,
        handler: async ({ messageId }) => {
          if (broken) throw new Error('warehouse API down');
          handled.push(messageId);
        },
      })
      .start();
    broker.send('fulfilment-q', [{ id: 'order-7', body: '{"order":7}' }]);
    await broker.whenIdle();
    const [letter] = await createAdmin(db.store).deadLetters.list({ consumer: 'fulfilment' });
    expect(letter).toMatchObject({ messageId: 'order-7', reason: 'MAX_ATTEMPTS' });
    expect(letter!.delivery.source).toBe('fulfilment-q');

    broken = false; // the cause is fixed
    relay = createRelay({ store: db.store, publisher: broker.publisher(), pollIntervalMs: 50 });
    await relay.start();
    const run = await inSchema('dead-letters', 'requeue', letter!.id);
    expect(run.code).toBe(0);
    await waitFor('the requeued letter to be handled', () => handled.length > 0);
    // Requeued again by mistake: the consumer sees a duplicate and does not handle it again.
    const again = await inSchema('dead-letters', 'requeue', letter!.id);
    expect(again.code).toBe(0);
    await waitFor(
      'the second copy to be delivered',
      () => broker.stats('fulfilment-q').duplicates === 1,
    );
    await broker.whenIdle();
    // Both copies published (the relay deletes what it published).
    expect(await countRows(db.store, 'outbox', `message_id = 'order-7'`)).toBe(0);
    expect(handled).toEqual(['order-7']);
    expect(broker.stats('fulfilment-q')).toMatchObject({ processed: 1, duplicates: 1 });
    expect(await waiting('fulfilment')).toBe(0);
  });
});
