import { randomBytes } from 'node:crypto';
import type { Options } from 'amqplib';
import {
  ConsumerStateError,
  createInbox,
  DEAD_LETTER_HEADERS,
  hasErrorCode,
  type Inbox,
  type InboxOptions,
} from '@justonce/core';
import { openTestStore } from '../../core/test/db';
import { createRabbitConsumer, type RabbitConsumer, type RabbitConsumerOptions } from '../src';
import { waitFor } from '../../../test-support/wait-for';
import { recordingLogger, type LogLine } from '../../../test-support/log-lines';
import { amqpUrl, closeConnectionsNamed, openAdmin, uniqueName, type Admin } from './broker';
import {
  createEffectsTable,
  effectCounts,
  EventLog,
  gate,
  stopAndRemove,
  writeEffect,
} from './support';

type TestStore = Awaited<ReturnType<typeof openTestStore>>;

describe('createRabbitConsumer on a real broker', () => {
  let store: TestStore;
  let admin: Admin;
  const running: RabbitConsumer[] = [];

  beforeAll(async () => {
    store = await openTestStore('postgres');
    await createEffectsTable(store);
    admin = await openAdmin();
  });
  afterEach(() => stopAndRemove(admin, running));
  afterAll(async () => {
    await admin.close();
    await store.dispose();
  });

  function id(label: string): string {
    return `${label}-${randomBytes(4).toString('hex')}`;
  }

  function publish(queue: string, body: string, options: Options.Publish = {}): void {
    admin.channel.sendToQueue(queue, Buffer.from(body), { persistent: true, ...options });
  }

  function track(consumer: RabbitConsumer): RabbitConsumer {
    running.push(consumer);
    return consumer;
  }

  /** The handler most tests use: one effect row per message. */
  const effect: RabbitConsumerOptions['handler'] = async (ctx) =>
    writeEffect(ctx.trx, store, ctx.messageId);

  /**
   * A consumer of a fresh queue named after `label`, with an inbox on the suite's store named
   * after the queue (`inbox` adds to its options), writing one effect per message and logging
   * its events, stopped and cleaned up after the test; `options` adds to or replaces any of
   * that.
   */
  function testConsumer(
    label: string,
    options: Partial<RabbitConsumerOptions> = {},
    inbox: Partial<InboxOptions> = {},
  ): { queue: string; log: EventLog; consumer: RabbitConsumer } {
    const queue = uniqueName(label);
    const log = new EventLog();
    const consumer = track(
      createRabbitConsumer({
        url: amqpUrl(),
        queue,
        inbox: createInbox({ store, consumer: queue, ...inbox }),
        handler: effect,
        ...log.hooks,
        ...options,
      }),
    );
    return { queue, log, consumer };
  }

  it('survives the broker closing its connection while a handler runs: reconnects, the delivery comes back, one effect each, nothing lost', async () => {
    const connectionName = uniqueName('consumer-conn');
    const ids = [id('m0'), id('m1'), id('m2'), id('m3'), id('m4')];
    const held = gate();
    const reached = gate();
    let handlerRuns = 0;
    const { queue, log, consumer } = testConsumer('cut', {
      connectionName,
      handler: async (ctx) => {
        handlerRuns++;
        await writeEffect(ctx.trx, store, ctx.messageId);
        if (ctx.messageId === ids[1] && ctx.attempt === 1 && !ctx.message.delivery.redelivered) {
          reached.open();
          await held.promise;
        }
      },
      reconnect: { baseMs: 50, capMs: 500 },
    });
    await consumer.start();
    for (const messageId of ids) publish(queue, 'x', { messageId });

    await reached.promise;
    const reconnected = log.next('a reconnection', (e) => e.type === 'connected' && e.reconnect);
    expect(await closeConnectionsNamed(connectionName)).toBe(1);
    await reconnected;
    expect(log.events.some((e) => e.type === 'disconnected')).toBe(true);
    // The stale handler commits now; its acknowledgement has no channel left to go to.
    held.open();

    await waitFor('every message applied and the queue empty', async () => {
      const counts = await effectCounts(store);
      return ids.every((m) => counts[m] === 1) && (await admin.depth(queue)) === 0;
    });
    await waitFor('the redelivered message settled', () =>
      log.settled('acked').some((e) => e.messageId === ids[1] && e.outcome?.status === 'duplicate'),
    );
    expect(log.settled('abandoned').map((e) => e.messageId)).toContain(ids[1]);
    expect(consumer.connected).toBe(true);
    expect(handlerRuns).toBeGreaterThanOrEqual(ids.length);
  });

  // The contract's poison clause checks the outcome and its facts; this checks the RabbitMQ
  // means: each wait is a retry queue's TTL, and the copy on the dead-letter queue.
  it('delays retries by the retry queues, then puts the dead letter on the dead-letter exchange with the shared headers', async () => {
    const runs: number[] = [];
    const { queue, log, consumer } = testConsumer(
      'poison',
      {
        retry: { delaysMs: [300, 600] },
        handler: async () => {
          runs.push(Date.now());
          throw new Error('downstream said no');
        },
      },
      { maxAttempts: 3 },
    );
    await consumer.start();
    const poison = id('poison');
    publish(queue, '{"order":1}', { messageId: poison, correlationId: 'corr-9' });

    await log.next('the dead letter', (e) => e.type === 'settled' && e.action === 'dead-lettered');
    expect(runs).toHaveLength(3);
    // Each wait is at least the retry queue's TTL (a few ms of clock slack allowed).
    expect(runs[1]! - runs[0]!).toBeGreaterThanOrEqual(290);
    expect(runs[2]! - runs[1]!).toBeGreaterThanOrEqual(590);
    expect(log.settled('redelivered').map((e) => e.delayMs)).toEqual([300, 600]);
    expect(consumer.topology().retryQueues).toEqual([
      `${queue}.retry.300ms`,
      `${queue}.retry.600ms`,
    ]);

    const topology = consumer.topology();
    const dead = await waitFor('the dead-letter queue to hold it', async () => {
      const messages = await admin.drain(topology.deadLetterQueue!);
      return messages.length > 0 ? messages : undefined;
    });
    expect(dead).toHaveLength(1);
    const [message] = dead;
    expect(message!.content.toString()).toBe('{"order":1}');
    expect(message!.fields).toMatchObject({ exchange: `${queue}.dlx`, routingKey: queue });
    expect(message!.properties).toMatchObject({ messageId: poison, correlationId: 'corr-9' });
    const headers = message!.properties.headers as Record<string, unknown>;
    expect(headers[DEAD_LETTER_HEADERS.reason]).toBe('MAX_ATTEMPTS');
    expect(headers[DEAD_LETTER_HEADERS.attempts]).toBe('3');
    expect(String(headers[DEAD_LETTER_HEADERS.error])).toContain('downstream said no');
    expect(headers[DEAD_LETTER_HEADERS.source]).toBe(queue);
    expect(headers[DEAD_LETTER_HEADERS.consumer]).toBe(queue);
    expect(headers[DEAD_LETTER_HEADERS.messageId]).toBe(poison);
    expect(typeof headers[DEAD_LETTER_HEADERS.deadLetterId]).toBe('string');
    // Only the shared names: the old RabbitMQ-only one is gone.
    expect(headers).not.toHaveProperty('x-justonce-queue');
    // A copy the consumer published, not one the broker dead-lettered.
    expect(headers).not.toHaveProperty('x-death');
    expect(await admin.depth(queue)).toBe(0);
  });

  // The contract's drain clause checks that the running handler commits and is acked before
  // stop resolves; this checks what the broker sees: prefetched deliveries that never started
  // are back in the queue, and the drained one's ack reached it before the connection closed.
  it('at a graceful stop, returns the prefetched deliveries not started to the queue', async () => {
    const held = gate();
    const reached = gate();
    const { queue, log, consumer } = testConsumer('stop', {
      prefetch: 5,
      handler: async (ctx) => {
        reached.open();
        await held.promise;
        await writeEffect(ctx.trx, store, ctx.messageId);
      },
    });
    await consumer.start();
    const ids = [id('s0'), id('s1'), id('s2')];
    for (const messageId of ids) publish(queue, 'x', { messageId });
    await reached.promise;
    await waitFor('every message delivered', async () => (await admin.depth(queue)) === 0);

    const stopped = consumer.stop();
    held.open();
    await stopped;

    expect(log.settled('acked').map((e) => e.messageId)).toEqual([ids[0]]);
    expect(log.settled('released').map((e) => e.messageId)).toEqual(ids.slice(1));
    expect(log.settled()).toHaveLength(ids.length);
    expect(consumer.connected).toBe(false);
    // The two not started are back in the queue; the first is not (its ack reached the broker
    // before the connection closed: 3 here would mean a lost acknowledgement).
    await waitFor(
      'both unstarted messages back in the queue',
      async () => (await admin.depth(queue)) === 2,
    );
  });

  /**
   * A consumer of `queue` already in use: the same inbox (named after the queue) and handler
   * as {@link testConsumer}'s, for the one that takes over what another gave back.
   */
  function nextConsumer(queue: string): { log: EventLog; consumer: RabbitConsumer } {
    const log = new EventLog();
    const consumer = track(
      createRabbitConsumer({
        url: amqpUrl(),
        queue,
        inbox: createInbox({ store, consumer: queue }),
        handler: effect,
        ...log.hooks,
      }),
    );
    return { log, consumer };
  }

  it('at a stop, reports the prefetched deliveries not started as released; the next consumer handles each once', async () => {
    const held = gate();
    const reached = gate();
    const { queue, log, consumer } = testConsumer('stop-released', {
      prefetch: 5,
      handler: async (ctx) => {
        reached.open();
        await held.promise;
        await writeEffect(ctx.trx, store, ctx.messageId);
      },
    });
    await consumer.start();
    const ids = [id('r0'), id('r1'), id('r2'), id('r3')];
    for (const messageId of ids) publish(queue, 'x', { messageId });
    await reached.promise;
    // All four are out with the consumer: one running, three waiting for its slot.
    await waitFor('every message delivered', async () => (await admin.depth(queue)) === 0);

    const stopped = consumer.stop();
    held.open();
    await stopped;

    const released = log.settled('released');
    expect(released.map((e) => e.messageId).sort()).toEqual(ids.slice(1).sort());
    for (const e of released) expect(e.error?.message).toMatch(/stopped before/);
    expect(log.settled('acked').map((e) => e.messageId)).toEqual([ids[0]]);

    const next = nextConsumer(queue);
    await next.consumer.start();
    await waitFor('the released messages handled by the next consumer', () =>
      ids.slice(1).every((m) => next.log.settled('acked').some((e) => e.messageId === m)),
    );
    const counts = await effectCounts(store);
    for (const m of ids) expect(counts[m]).toBe(1);
    expect(next.log.settled().map((e) => [e.messageId, e.action, e.outcome?.status])).toEqual(
      ids.slice(1).map((m) => [m, 'acked', 'processed']),
    );
  });

  it('on a lost connection, reports the deliveries not started as released; they come back and are handled once', async () => {
    const connectionName = uniqueName('released-conn');
    const ids = [id('l0'), id('l1'), id('l2'), id('l3')];
    const held = gate();
    const reached = gate();
    const { queue, log, consumer } = testConsumer('lost-released', {
      connectionName,
      prefetch: 5,
      reconnect: { baseMs: 50, capMs: 500 },
      handler: async (ctx) => {
        if (ctx.messageId === ids[0] && !ctx.message.delivery.redelivered) {
          reached.open();
          await held.promise;
        }
        await writeEffect(ctx.trx, store, ctx.messageId);
      },
    });
    await consumer.start();
    for (const messageId of ids) publish(queue, 'x', { messageId });
    await reached.promise;
    await waitFor('every message delivered', async () => (await admin.depth(queue)) === 0);

    const reconnected = log.next('a reconnection', (e) => e.type === 'connected' && e.reconnect);
    expect(await closeConnectionsNamed(connectionName)).toBe(1);
    await reconnected;
    const released = log.settled('released');
    expect(released.map((e) => e.messageId).sort()).toEqual(ids.slice(1).sort());
    for (const e of released) expect(e.error).toBeInstanceOf(Error);
    held.open();

    await waitFor('every message applied and the queue empty', async () => {
      const counts = await effectCounts(store);
      return ids.every((m) => counts[m] === 1) && (await admin.depth(queue)) === 0;
    });
    await waitFor('every redelivery settled', () =>
      ids.every((m) => log.settled('acked').some((e) => e.messageId === m)),
    );
    for (const m of ids.slice(1)) {
      expect(
        log
          .settled()
          .filter((e) => e.messageId === m)
          .map((e) => e.action),
      ).toEqual(['released', 'acked']);
    }
    const counts = await effectCounts(store);
    for (const m of ids) expect(counts[m]).toBe(1);
  });

  it('stops without drain: gives the running delivery back at once, and drops its late answer', async () => {
    const held = gate();
    const reached = gate();
    let finished = false;
    const { queue, log, consumer } = testConsumer('nodrain', {
      prefetch: 5,
      handler: async (ctx) => {
        reached.open();
        await held.promise;
        await writeEffect(ctx.trx, store, ctx.messageId);
        finished = true;
      },
    });
    await consumer.start();
    const ids = [id('n0'), id('n1')];
    for (const messageId of ids) publish(queue, 'x', { messageId });
    await reached.promise;
    await waitFor('both messages delivered', async () => (await admin.depth(queue)) === 0);

    await consumer.stop({ drain: false });
    expect(finished).toBe(false);
    // The one not started is given back first, then the running one.
    expect(log.settled().map((e) => [e.messageId, e.action])).toEqual([
      [ids[1], 'released'],
      [ids[0], 'released'],
    ]);
    await waitFor('both messages back in the queue', async () => (await admin.depth(queue)) === 2);
    // The handler commits after the stop; nothing more is sent for its delivery.
    held.open();
    await waitFor('the late handler to finish', () => finished);
    expect(log.settled()).toHaveLength(2);
  });

  it('gives a delivery whose inbox call throws back to a quorum queue only after a growing delay, not in a hot loop', async () => {
    const queue = uniqueName('inbox-throws');
    const inbox = createInbox({ store, consumer: queue });
    let calls = 0;
    // Not a store outage (a broken hook, a bug): core decides `release`.
    const throwing: Inbox = {
      ...inbox,
      process: async () => {
        calls += 1;
        throw new TypeError('a bug in a hook');
      },
    };
    const log = new EventLog();
    const consumer = track(
      createRabbitConsumer({
        url: amqpUrl(),
        queue,
        queueArguments: { 'x-queue-type': 'quorum' },
        inbox: throwing,
        handler: effect,
        storeRetry: { baseMs: 100, capMs: 400 },
        ...log.hooks,
      }),
    );
    await consumer.start();
    publish(queue, 'x', { messageId: id('throws') });
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    await consumer.stop();

    // Waits of about 50, 100, 200, 200… ms: around a dozen calls in 2 s. An immediate nack
    // brings it back hundreds of times, and a quorum queue drops it at its delivery limit.
    expect(calls).toBeGreaterThan(2);
    expect(calls).toBeLessThan(40);
    const actions = new Set(log.settled().map((e) => e.action));
    expect([...actions]).toEqual(['released']);
    await waitFor('the message still in the queue', async () => (await admin.depth(queue)) === 1);
  });

  it('in batch mode, counts a throw of processBatch as one step of the backoff, not one per delivery', async () => {
    const queue = uniqueName('batch-throws');
    const inbox = createInbox({ store, consumer: queue });
    let calls = 0;
    const throwing: Inbox = {
      ...inbox,
      processBatch: async () => {
        calls += 1;
        throw new TypeError('a bug in a hook');
      },
    };
    const lines: LogLine[] = [];
    const log = new EventLog();
    const consumer = track(
      createRabbitConsumer({
        url: amqpUrl(),
        queue,
        inbox: throwing,
        handler: effect,
        mode: 'batch',
        prefetch: 20,
        batchSize: 10,
        batchWaitMs: 200,
        // Waits in [0, 100), [0, 200), [0, 400) ms for the first throws of one batch. Counted
        // once per delivery, the second wait would be drawn from up to a minute.
        storeRetry: { baseMs: 100, capMs: 60_000 },
        logger: recordingLogger(lines),
        ...log.hooks,
      }),
    );
    await consumer.start();
    const ids = Array.from({ length: 10 }, (_, i) => id(`t${i}`));
    for (const messageId of ids) publish(queue, 'x', { messageId });
    await waitFor('three throws of the batch', () => calls >= 3, { timeoutMs: 5_000 });
    await consumer.stop();

    const returned = lines.filter((l) => l.message.startsWith('inbox failed'));
    expect(returned.length).toBe(calls);
    expect(returned[0]!.fields.messageIds).toEqual(ids);
    expect(new Set(log.settled().map((e) => e.action))).toEqual(new Set(['released']));
    await waitFor('the messages still in the queue', async () => (await admin.depth(queue)) === 10);
  });

  it('in batch mode, takes a burst in few processBatch transactions and settles each delivery on its own', async () => {
    const queue = uniqueName('batch');
    const inbox = createInbox({ store, consumer: queue });
    const sizes: number[] = [];
    const counted: Inbox = {
      ...inbox,
      processBatch: (envelopes, handler, options) => {
        sizes.push(envelopes.length);
        return inbox.processBatch(envelopes, handler, options);
      },
    };
    const failing = id('fails-once');
    const log = new EventLog();
    const consumer = track(
      createRabbitConsumer({
        url: amqpUrl(),
        queue,
        inbox: counted,
        mode: 'batch',
        prefetch: 20,
        batchSize: 10,
        // Long enough for the whole burst to arrive before the first batch runs.
        batchWaitMs: 200,
        retry: { delaysMs: [100] },
        handler: async (ctx) => {
          // By attempt: the batch runs its handlers again, each in a savepoint, after a failure.
          if (ctx.messageId === failing && ctx.attempt === 1) {
            throw new Error('first attempt fails');
          }
          await writeEffect(ctx.trx, store, ctx.messageId);
        },
        ...log.hooks,
      }),
    );
    await consumer.start();
    const ids = [...Array.from({ length: 9 }, (_, i) => id(`b${i}`)), failing];
    for (const messageId of ids) publish(queue, 'x', { messageId });

    await waitFor('every message acked', async () =>
      ids.every((m) => log.settled('acked').some((e) => e.messageId === m)),
    );
    // The burst went in one transaction; the failed message came back through its retry queue.
    expect(sizes[0]).toBe(10);
    expect(log.settled('redelivered').map((e) => [e.messageId, e.delayMs])).toEqual([
      [failing, 100],
    ]);
    const counts = await effectCounts(store);
    for (const m of ids) expect(counts[m]).toBe(1);
    expect(log.settled('acked')).toHaveLength(10);
  });

  it('uses the inbox you built, and refuses the options that belong to it', async () => {
    const queue = uniqueName('own-inbox');
    const inbox = createInbox({ store, consumer: id('own') });
    const handler = async () => undefined;
    const loose = (options: object) => options as RabbitConsumerOptions;
    expect(() =>
      createRabbitConsumer(
        loose({ url: amqpUrl(), queue, inbox, handler, retry: { maxAttempts: 2 } }),
      ),
    ).toThrow(/retry.maxAttempts/);
    expect(() =>
      createRabbitConsumer(loose({ url: amqpUrl(), queue, inbox, handler, store })),
    ).toThrow(/unknown option `store`/);
    expect(() => createRabbitConsumer(loose({ url: amqpUrl(), queue, handler }))).toThrow(
      /inbox must be an Inbox/,
    );
    const log = new EventLog();
    const consumer = track(
      createRabbitConsumer({ url: amqpUrl(), queue, inbox, handler, ...log.hooks }),
    );
    await consumer.start();
    publish(queue, 'x', { messageId: id('one') });
    await log.next('an acknowledgement', (e) => e.type === 'settled' && e.action === 'acked');
  });

  it('validates its configuration at construction', () => {
    const base = {
      url: amqpUrl(),
      inbox: createInbox({ store, consumer: 'q' }),
      handler: async () => undefined,
    };
    const invalid = (options: object) => {
      let caught: unknown;
      try {
        createRabbitConsumer({ ...base, queue: 'q', ...options });
      } catch (error) {
        caught = error;
      }
      return hasErrorCode(caught, 'INVALID_CONFIG');
    };
    expect(invalid({ queue: '' })).toBe(true);
    expect(invalid({ queue: 'amq.reserved' })).toBe(true);
    expect(invalid({ queue: 'q'.repeat(250) })).toBe(true);
    expect(invalid({ prefetch: 0 })).toBe(true);
    expect(invalid({ prefetch: 2, concurrency: 3 })).toBe(true);
    expect(invalid({ retry: { delaysMs: [] } })).toBe(true);
    expect(invalid({ retry: { delaysMs: [100], backoff: () => 1 } })).toBe(true);
    expect(invalid({ url: undefined })).toBe(true);
    expect(invalid({ deadLetter: { exchangeType: 'weird' } })).toBe(true);
    expect(invalid({ deadLetter: { exchange: 'amq.direct' } })).toBe(true);
    expect(invalid({ messageId: { extract: 'not a function' } })).toBe(true);
    expect(invalid({ scopeHeader: '' })).toBe(true);
    expect(invalid({ inbox: { consumer: 'no process' } })).toBe(true);
    expect(invalid({ handler: 'not a function' })).toBe(true);
    expect(invalid({ mode: 'batches' })).toBe(true);
    expect(invalid({ mode: 'batch', batchSize: 0 })).toBe(true);
    expect(invalid({ mode: 'batch', prefetch: 10, batchSize: 11 })).toBe(true);
    expect(invalid({ mode: 'batch', batchWaitMs: -1 })).toBe(true);
    expect(invalid({ mode: 'batch', batchWaitMs: 1_001 })).toBe(true);
    expect(invalid({ mode: 'batch', inbox: { consumer: 'q', process: () => undefined } })).toBe(
      true,
    );
    expect(invalid({})).toBe(false);
    // The default batch size is 50, or the prefetch when it is lower.
    expect(invalid({ mode: 'batch', prefetch: 5 })).toBe(false);
    expect(invalid({ mode: 'batch', prefetch: 100, batchSize: 100, batchWaitMs: 0 })).toBe(false);
  });

  it('fails start with a typed error when the queue exists with other arguments', async () => {
    const queue = uniqueName('clash');
    await admin.channel.assertQueue(queue, { durable: false });
    const consumer = createRabbitConsumer({
      url: amqpUrl(),
      queue,
      inbox: createInbox({ store, consumer: queue }),
      handler: async () => undefined,
    });
    let caught: unknown;
    try {
      await consumer.start();
    } catch (error) {
      caught = error;
    }
    expect(hasErrorCode(caught, 'RABBIT_TOPOLOGY')).toBe(true);
    expect(consumer.connected).toBe(false);
    // A failed start leaves it stopped: a new consumer is needed, not a second start.
    expect(consumer.running).toBe(false);
    await expect(consumer.start()).rejects.toBeInstanceOf(ConsumerStateError);
    await admin.remove({ queues: [queue] });
  });
});
