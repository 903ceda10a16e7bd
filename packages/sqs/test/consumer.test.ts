import { DeleteMessageCommand, SQSClient, type Message } from '@aws-sdk/client-sqs';
import {
  createDeadLetters,
  createInbox,
  DEAD_LETTER_HEADERS,
  type HandlerContext,
  type InboxStep,
  type SettledEvent,
} from '@justonce/core';
import { createSqsConsumer, type SqsConsumer, type SqsConsumerOptions } from '../src';
import {
  TestQueues,
  openEffectsStore,
  sqsClientConfig,
  unique,
  type EffectsStore,
} from './support';
import { waitFor } from '../../../test-support/wait-for';
import { recordingLogger, type LogLine } from '../../../test-support/log-lines';

let store: EffectsStore;
let queues: TestQueues;
const consumers: SqsConsumer[] = [];

beforeAll(async () => {
  store = await openEffectsStore();
  queues = new TestQueues();
});

afterEach(async () => {
  await Promise.all(consumers.splice(0).map((w) => w.stop({ timeoutMs: 5_000 })));
});

afterAll(async () => {
  await queues.dispose();
  await store.dispose();
});

/** Starts a consumer with test defaults (short polls, quick retries) and records what it settles. */
async function startConsumer<R>(
  options: Omit<SqsConsumerOptions<R>, 'clientConfig' | 'client'>,
): Promise<{ sqsConsumer: SqsConsumer; settled: SettledEvent<R, Message>[] }> {
  const settled: SettledEvent<R, Message>[] = [];
  const sqsConsumer = createSqsConsumer<R>({
    clientConfig: sqsClientConfig(),
    waitTimeSeconds: 1,
    retry: { baseMs: 0, capMs: 0 },
    ...options,
    onSettled: (event) => {
      settled.push(event);
      options.onSettled?.(event);
    },
  });
  consumers.push(sqsConsumer);
  await sqsConsumer.start();
  return { sqsConsumer, settled };
}

/** A handler that writes one effect row per run, in the message's transaction. */
function effectHandler(consumer: string, note?: (ctx: HandlerContext) => string) {
  return async (ctx: HandlerContext) => {
    await ctx.trx.raw(
      `insert into ${store.effectsTable} (consumer, message_id, note) values (?, ?, ?)`,
      [consumer, ctx.messageId, note?.(ctx) ?? null],
    );
  };
}

describe('SQS consumer (ElasticMQ)', () => {
  it('without the heartbeat, redelivers a message while its slow handler runs, and it still takes effect once', async () => {
    const queueUrl = await queues.create(unique('slow-nohb'));
    const consumer = unique('c');
    const received = new Map<string, number>();
    const inbox = createInbox({
      store,
      consumer,
      onStep: (step: InboxStep, id: string) => {
        if (step === 'received') received.set(id, (received.get(id) ?? 0) + 1);
      },
    });
    await queues.send(queueUrl, [{ body: 'slow', attributes: { 'message-id': 'slow-1' } }]);
    let runs = 0;
    const { settled } = await startConsumer({
      queueUrl,
      concurrency: 2,
      visibilityTimeoutSeconds: 1,
      heartbeat: { enabled: false },
      inbox,
      handler: async (ctx) => {
        runs += 1;
        await effectHandler(consumer)(ctx);
        // Still running when SQS hands the message out again.
        await waitFor('the second delivery', () => (received.get('slow-1') ?? 0) >= 2, {
          timeoutMs: 15_000,
          intervalMs: 100,
        });
      },
    });
    await waitFor('both deliveries to settle', () => settled.length >= 2, {
      timeoutMs: 20_000,
      intervalMs: 100,
    });

    expect(runs).toBe(1);
    expect(Object.fromEntries(await store.effectCounts(consumer))).toEqual({ 'slow-1': 1 });
    const statuses = settled.map((e) => e.outcome?.status).sort();
    expect(statuses).toEqual(['duplicate', 'processed']);
    const duplicate = settled.find((e) => e.outcome?.status === 'duplicate');
    expect(Number(duplicate?.message.Attributes?.ApproximateReceiveCount)).toBeGreaterThanOrEqual(
      2,
    );
    await waitFor('an empty queue', async () => (await queues.depth(queueUrl)) === 0, {
      timeoutMs: 10_000,
      intervalMs: 100,
    });
  });

  it("with the heartbeat, keeps a slow handler's message invisible: no second delivery", async () => {
    const queueUrl = await queues.create(unique('slow-hb'));
    const consumer = unique('c');
    let deliveries = 0;
    const inbox = createInbox({
      store,
      consumer,
      onStep: (step: InboxStep) => {
        if (step === 'received') deliveries += 1;
      },
    });
    await queues.send(queueUrl, [{ body: 'slow', attributes: { 'message-id': 'slow-2' } }]);
    const { settled } = await startConsumer({
      queueUrl,
      concurrency: 2,
      visibilityTimeoutSeconds: 2,
      heartbeat: { enabled: true, intervalMs: 400 },
      inbox,
      handler: async (ctx) => {
        await effectHandler(consumer)(ctx);
        // Twice the visibility timeout: only the heartbeat keeps the message hidden.
        await new Promise((resolve) => setTimeout(resolve, 4_000));
      },
    });
    await waitFor('the message to settle', () => settled.length >= 1, {
      timeoutMs: 20_000,
      intervalMs: 100,
    });
    await waitFor('an empty queue', async () => (await queues.depth(queueUrl)) === 0, {
      timeoutMs: 10_000,
      intervalMs: 100,
    });

    expect(deliveries).toBe(1);
    expect(settled).toHaveLength(1);
    expect(settled[0]?.outcome).toMatchObject({ status: 'processed', attempt: 1 });
    expect(Object.fromEntries(await store.effectCounts(consumer))).toEqual({ 'slow-2': 1 });
  });

  it.each(['message', 'batch'] as const)(
    '%s mode: aborts ctx.signal when a held delivery goes stale (in batch mode, for its whole batch)',
    async (mode) => {
      const queueUrl = await queues.create(unique('stale'));
      const consumer = unique('c');
      await queues.send(queueUrl, [
        { body: 'a', attributes: { 'message-id': 'stale-a' } },
        { body: 'b', attributes: { 'message-id': 'stale-b' } },
      ]);
      // The consumer's own client, with the receipt handles it receives noted by message id.
      const client = new SQSClient(sqsClientConfig());
      const receipts = new Map<string, string>();
      client.middlewareStack.add(
        (next, context) => async (args) => {
          const result = await next(args);
          if (context.commandName === 'ReceiveMessageCommand') {
            const { Messages = [] } = result.output as { Messages?: Message[] };
            for (const m of Messages) {
              const id = m.MessageAttributes?.['message-id']?.StringValue;
              if (id !== undefined && m.ReceiptHandle) receipts.set(id, m.ReceiptHandle);
            }
          }
          return result;
        },
        { step: 'initialize', name: 'noteReceipts' },
      );
      const signals = new Map<string, AbortSignal>();
      const sqsConsumer = createSqsConsumer({
        client,
        queueUrl,
        mode,
        concurrency: 10,
        waitTimeSeconds: 1,
        heartbeat: { enabled: true, intervalMs: 200 },
        inbox: createInbox({ store, consumer }),
        handler: async (ctx) => {
          if (ctx.messageId === 'stale-a') {
            // Someone else deleted the message: SQS refuses the next extension of its receipt.
            await queues.sqs.send(
              new DeleteMessageCommand({
                QueueUrl: queueUrl,
                ReceiptHandle: receipts.get('stale-a'),
              }),
            );
            await waitFor('the signal to abort', () => ctx.signal.aborted, {
              timeoutMs: 10_000,
              intervalMs: 20,
            });
          }
          signals.set(ctx.messageId, ctx.signal);
        },
      });
      consumers.push(sqsConsumer);
      try {
        await sqsConsumer.start();
        await waitFor('both messages handled', () => signals.size === 2, {
          timeoutMs: 20_000,
          intervalMs: 50,
        });
        expect(signals.get('stale-a')?.aborted).toBe(true);
        // Message mode: each delivery has its own signal. Batch mode: the two came in one
        // receive batch, which shares one signal, so the stale one aborted it for both.
        if (mode === 'message') {
          expect(signals.get('stale-b')?.aborted).toBe(false);
        } else {
          expect(signals.get('stale-b')).toBe(signals.get('stale-a'));
          expect(signals.get('stale-b')?.aborted).toBe(true);
        }
      } finally {
        await sqsConsumer.stop({ timeoutMs: 5_000 });
        client.destroy();
      }
    },
  );

  it('batch mode: a failing message is retried while the rest of its batch commits', async () => {
    const queueUrl = await queues.create(unique('batch-retry'));
    const consumer = unique('c');
    await queues.send(
      queueUrl,
      ['b-0', 'b-1', 'b-2', 'b-3'].map((id) => ({ body: id, attributes: { 'message-id': id } })),
    );
    const { settled } = await startConsumer({
      queueUrl,
      mode: 'batch',
      inbox: createInbox({ store, consumer }),
      handler: async (ctx) => {
        // The first delivery fails in every pass the batch makes over it; the retry succeeds.
        if (ctx.messageId === 'b-2' && ctx.attempt === 1) throw new Error('fails once');
        await effectHandler(consumer)(ctx);
      },
    });
    await waitFor(
      'four acked messages',
      () => settled.filter((e) => e.action === 'acked').length === 4,
      { timeoutMs: 20_000, intervalMs: 100 },
    );
    expect(Object.fromEntries(await store.effectCounts(consumer))).toEqual({
      'b-0': 1,
      'b-1': 1,
      'b-2': 1,
      'b-3': 1,
    });
    const retried = settled.filter((e) => e.action === 'redelivered');
    expect(retried.map((e) => e.outcome?.messageId)).toEqual(['b-2']);
    expect(await queues.depth(queueUrl)).toBe(0);
  });

  it("warns once at start, naming both numbers, when the inbox's maxAttempts is not below the queue's maxReceiveCount", async () => {
    const { queueUrl } = await queues.createWithDeadLetterQueue('redrive-check', 3);
    const warningsAt = async (maxAttempts: number): Promise<LogLine[]> => {
      const lines: LogLine[] = [];
      const consumer = unique('c');
      const inbox = createInbox({ store, consumer, maxAttempts });
      // What the consumer reads off the inbox.
      expect(inbox.settings).toMatchObject({ consumer, maxAttempts });
      await startConsumer({
        queueUrl,
        inbox,
        handler: async () => undefined,
        logger: recordingLogger(lines),
      });
      return lines.filter((line) => line.level === 'warn');
    };

    const above = await warningsAt(5);
    expect(above).toHaveLength(1);
    expect(above[0]?.message).toContain(
      "maxAttempts (5) is not below the queue's redrive maxReceiveCount (3)",
    );
    expect(above[0]?.message).toContain("Set the inbox's maxAttempts to at most 2");
    expect(above[0]?.fields).toMatchObject({ queueUrl, maxAttempts: 5, maxReceiveCount: 3 });
    // Equal is not enough: a message that kills the process is dead-lettered by the inbox only
    // on the delivery after maxAttempts, which SQS no longer makes.
    expect(await warningsAt(3)).toHaveLength(1);
    expect(await warningsAt(2)).toEqual([]);
  });

  it("moves a message that keeps failing to the redrive dead-letter queue, with the store's record", async () => {
    const { queueUrl, dlqUrl } = await queues.createWithDeadLetterQueue('poison', 3);
    const consumer = unique('c');
    await queues.send(queueUrl, [{ body: 'poison', attributes: { 'message-id': 'poison-1' } }]);
    let calls = 0;
    const { sqsConsumer, settled } = await startConsumer({
      queueUrl,
      // Below the redrive's maxReceiveCount, so the inbox gives up before SQS's redrive would.
      inbox: createInbox({ store, consumer, maxAttempts: 2 }),
      handler: async () => {
        calls += 1;
        throw new Error('always fails');
      },
    });
    const [dead] = await queues.receive(dlqUrl, 1, 20);

    expect(sqsConsumer.queue).toMatchObject({ maxReceiveCount: 3, deadLetterQueueUrl: dlqUrl });
    expect(calls).toBe(2);
    expect(dead?.Body).toBe('poison');
    const attrs = dead?.MessageAttributes ?? {};
    expect(attrs['message-id']?.StringValue).toBe('poison-1');
    expect(attrs[DEAD_LETTER_HEADERS.reason]?.StringValue).toBe('MAX_ATTEMPTS');
    expect(attrs[DEAD_LETTER_HEADERS.consumer]?.StringValue).toBe(consumer);
    const letters = await createDeadLetters(store).list({ consumer });
    expect(letters).toHaveLength(1);
    expect(letters[0]).toMatchObject({
      messageId: 'poison-1',
      reason: 'MAX_ATTEMPTS',
      attempts: 2,
    });
    expect(attrs[DEAD_LETTER_HEADERS.deadLetterId]?.StringValue).toBe(letters[0]?.id);
    expect(attrs[DEAD_LETTER_HEADERS.attempts]?.StringValue).toBe('2');
    expect(attrs[DEAD_LETTER_HEADERS.source]?.StringValue).toBe(queueUrl);
    // The old attribute names are gone.
    expect(Object.keys(attrs).filter((name) => name.startsWith('x-dead-letter-'))).toEqual([]);
    await waitFor(
      'the source message to be deleted',
      () =>
        settled.some((e) => e.outcome?.status === 'dead-lettered' && e.action === 'dead-lettered'),
      { timeoutMs: 10_000, intervalMs: 100 },
    );
    const event = settled.find((e) => e.action === 'dead-lettered');
    expect(event?.deadLetter).toMatchObject({
      reason: 'MAX_ATTEMPTS',
      attempts: 2,
      messageId: 'poison-1',
      consumer,
      source: queueUrl,
      deadLetterId: letters[0]?.id,
    });
    expect(await queues.depth(queueUrl)).toBe(0);
    expect(await store.effectCounts(consumer)).toEqual(new Map());
  });

  it.each(['message', 'batch'] as const)(
    '%s mode: handles a FIFO group in order under concurrency, and a retry holds its group back',
    async (mode) => {
      const queueUrl = await queues.create(unique('order', true));
      const consumer = unique('c');
      const groups = ['g0', 'g1', 'g2', 'g3'];
      const perGroup = 8;
      const messages = [];
      for (let i = 0; i < perGroup; i++) {
        for (const g of groups) {
          const id = `${g}-${i}`;
          messages.push({ body: id, group: g, dedupe: id, attributes: { 'message-id': id } });
        }
      }
      await queues.send(queueUrl, messages);
      const { settled } = await startConsumer({
        queueUrl,
        mode,
        concurrency: 8,
        inbox: createInbox({ store, consumer }),
        handler: async (ctx) => {
          if (ctx.messageId === 'g1-2' && ctx.attempt === 1) throw new Error('fails once');
          await new Promise((resolve) => setTimeout(resolve, Math.floor(Math.random() * 15)));
          await effectHandler(consumer)(ctx);
        },
      });
      const total = groups.length * perGroup;
      await waitFor(
        'every message to take effect',
        async () => (await store.effectCounts(consumer)).size === total,
        { timeoutMs: 30_000, intervalMs: 100 },
      );

      const effects = await store.effects(consumer);
      expect(effects).toHaveLength(total);
      for (const g of groups) {
        const order = effects
          .filter((e) => e.messageId.startsWith(`${g}-`))
          .map((e) => e.messageId);
        expect(order).toEqual(Array.from({ length: perGroup }, (_, i) => `${g}-${i}`));
      }
      expect(settled.some((e) => e.outcome?.status === 'failed')).toBe(true);
      await waitFor('an empty queue', async () => (await queues.depth(queueUrl)) === 0, {
        timeoutMs: 10_000,
        intervalMs: 100,
      });
    },
  );

  it('stop({ drain: false }): aborts the running handler and gives its message back without waiting for it', async () => {
    const queueUrl = await queues.create(unique('no-drain'), { VisibilityTimeout: '60' });
    const consumer = unique('c');
    await queues.send(queueUrl, [{ body: 'x', attributes: { 'message-id': 'nodrain-1' } }]);
    let entered!: () => void;
    const inHandler = new Promise<void>((resolve) => (entered = resolve));
    let sawAbort = false;
    const { sqsConsumer, settled } = await startConsumer({
      queueUrl,
      inbox: createInbox({ store, consumer }),
      handler: async (ctx) => {
        entered();
        await new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve()));
        sawAbort = true;
        throw new Error('stopped');
      },
    });
    await inHandler;
    const stoppingAt = Date.now();
    await sqsConsumer.stop({ drain: false, timeoutMs: 30_000 });

    // Not the 30 s a draining stop would wait for the handler.
    expect(Date.now() - stoppingAt).toBeLessThan(5_000);
    expect(sqsConsumer.running).toBe(false);
    expect(settled.map((e) => [e.action, e.messageId])).toEqual([['released', 'nodrain-1']]);
    // Hidden only until the long poll the stop aborted has ended on SQS's side (1 s here),
    // or that poll would take it and hide it for the 60 s visibility timeout.
    expect(settled[0]?.delayMs).toBeLessThanOrEqual(1_500);
    await waitFor('the handler to see the abort', () => sawAbort, { timeoutMs: 5_000 });
    // Visible again within seconds, not after the queue's 60 s visibility timeout.
    const [again] = await queues.receive(queueUrl, 1, 5);
    expect(again?.MessageAttributes?.['message-id']?.StringValue).toBe('nodrain-1');
    expect(Object.fromEntries(await store.effectCounts(consumer))).toEqual({});
  });

  it('stop({ timeoutMs }): a handler still running at the timeout is abandoned; its late commit neither deletes nor reports', async () => {
    const queueUrl = await queues.create(unique('late'), { VisibilityTimeout: '3' });
    const consumer = unique('c');
    await queues.send(queueUrl, [{ body: 'x', attributes: { 'message-id': 'late-1' } }]);
    let entered!: () => void;
    const inHandler = new Promise<void>((resolve) => (entered = resolve));
    const write = effectHandler(consumer);
    const { sqsConsumer, settled } = await startConsumer({
      queueUrl,
      inbox: createInbox({ store, consumer }),
      // Ignores its signal and commits 2 s in, long after the stop resolved.
      handler: async (ctx) => {
        entered();
        await new Promise((resolve) => setTimeout(resolve, 2_000));
        await write(ctx);
      },
    });
    await inHandler;
    await sqsConsumer.stop({ timeoutMs: 500 });
    expect(settled.map((e) => [e.action, e.messageId])).toEqual([['abandoned', 'late-1']]);

    await waitFor('the late commit', async () => (await store.effectCounts(consumer)).size > 0, {
      timeoutMs: 5_000,
      intervalMs: 100,
    });
    await new Promise((resolve) => setTimeout(resolve, 300));
    // Nothing reported after the stop, and not deleted: SQS delivers it again.
    expect(settled).toHaveLength(1);
    const [again] = await queues.receive(queueUrl, 1, 10);
    expect(again?.MessageAttributes?.['message-id']?.StringValue).toBe('late-1');
  });

  it('rejects a queue it cannot describe with a typed error', async () => {
    const missing = createSqsConsumer({
      clientConfig: sqsClientConfig(),
      queueUrl: `${(await queues.create(unique('exists'))).replace(/[^/]+$/, '')}${unique('missing')}`,
      inbox: createInbox({ store, consumer: unique('c') }),
      handler: async () => undefined,
    });
    consumers.push(missing);
    await expect(missing.start()).rejects.toMatchObject({ code: 'SQS_QUEUE_UNAVAILABLE' });
  });
});
