import type {
  Message,
  SQSClient,
  SendMessageBatchCommandInput,
  SendMessageBatchCommandOutput,
} from '@aws-sdk/client-sqs';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { SQSClient as Client } from '@aws-sdk/client-sqs';
import {
  createInbox,
  createOutbox,
  createRelay,
  hasErrorCode,
  type OutgoingMessage,
  type Publisher,
  type PublishResult,
  type SettledEvent,
} from '@justonce/core';
import { createSqsConsumer, createSqsPublisher } from '../src';
import {
  TestQueues,
  openEffectsStore,
  sqsClientConfig,
  unique,
  type EffectsStore,
} from './support';
import { waitFor } from '../../../test-support/wait-for';

let queues: TestQueues;
let store: EffectsStore;

beforeAll(async () => {
  queues = new TestQueues();
  store = await openEffectsStore();
});

afterAll(async () => {
  await queues.dispose();
  await store.dispose();
});

const text = (s: string) => new TextEncoder().encode(s);

function message(
  destination: string,
  id: string,
  key: string | null = null,
  headers: Record<string, string> = {},
): OutgoingMessage {
  return { messageId: id, destination, key, headers, payload: text(`body of ${id}`) };
}

type Tamper = (
  input: SendMessageBatchCommandInput,
  call: number,
) => ((output: SendMessageBatchCommandOutput) => void) | void;

/**
 * A real client to ElasticMQ with a fault injector on SendMessageBatch: `tamper` may change
 * the request before it is sent and return a function that changes the answer.
 */
function tamperedClient(tamper: Tamper): { client: SQSClient; calls: () => number } {
  const client = new Client(sqsClientConfig());
  let calls = 0;
  client.middlewareStack.add(
    (next, context) => async (args) => {
      if (context.commandName !== 'SendMessageBatchCommand') return next(args);
      calls += 1;
      const after = tamper(args.input as SendMessageBatchCommandInput, calls);
      const result = await next(args);
      after?.(result.output as SendMessageBatchCommandOutput);
      return result;
    },
    { step: 'initialize', name: 'tamperSendMessageBatch' },
  );
  return { client, calls: () => calls };
}

function failures(results: PublishResult[]) {
  return results.filter((r): r is Extract<PublishResult, { ok: false }> => !r.ok);
}

describe('SQS publisher (ElasticMQ)', () => {
  it('sends 25 messages in batches of ten, to a queue by URL and by name, with headers as attributes', async () => {
    const name = unique('pub');
    const queueUrl = await queues.create(name);
    const publisher = createSqsPublisher({ clientConfig: sqsClientConfig() });
    try {
      const messages = Array.from({ length: 25 }, (_, i) =>
        message(i % 2 === 0 ? queueUrl : name, `m-${i}`, `k${i % 3}`, {
          'correlation-id': 'corr-1',
          traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
        }),
      );
      const results = await publisher.publish(messages);
      expect(results.map((r) => r.messageId)).toEqual(messages.map((m) => m.messageId));
      expect(failures(results)).toEqual([]);

      const received = await queues.receive(queueUrl, 25);
      expect(received).toHaveLength(25);
      const byId = new Map(
        received.map((m) => [m.MessageAttributes?.['message-id']?.StringValue, m]),
      );
      expect([...byId.keys()].sort()).toEqual(messages.map((m) => m.messageId).sort());
      const one = byId.get('m-7');
      expect(one?.Body).toBe('body of m-7');
      expect(one?.MessageAttributes?.['correlation-id']?.StringValue).toBe('corr-1');
      expect(one?.MessageAttributes?.traceparent?.StringValue).toMatch(/^00-/);
    } finally {
      await publisher.close();
    }
  });

  it('FIFO: group = key, deduplication id = message id, order kept per key, a re-publish dropped', async () => {
    const queueUrl = await queues.create(unique('pub', true));
    const publisher = createSqsPublisher({ clientConfig: sqsClientConfig(), concurrency: 3 });
    try {
      const messages = Array.from({ length: 30 }, (_, i) =>
        message(queueUrl, `f-${i}`, `key-${i % 2}`),
      );
      expect(failures(await publisher.publish(messages))).toEqual([]);
      // The relay's re-publish after a crash: same ids, dropped by SQS's deduplication.
      expect(failures(await publisher.publish(messages.slice(0, 5)))).toEqual([]);

      const received = await queues.receive(queueUrl, 30);
      expect(await queues.receive(queueUrl, 1, 1)).toEqual([]);
      expect(received).toHaveLength(30);
      for (const key of ['key-0', 'key-1']) {
        const ids = received
          .filter((m) => m.Attributes?.MessageGroupId === key)
          .map((m) => m.MessageAttributes?.['message-id']?.StringValue);
        expect(ids).toEqual(messages.filter((m) => m.key === key).map((m) => m.messageId));
      }
      for (const m of received) {
        expect(m.Attributes?.MessageDeduplicationId).toBe(
          m.MessageAttributes?.['message-id']?.StringValue,
        );
      }
    } finally {
      await publisher.close();
    }
  });

  it('fails only the bad entries of a batch with typed errors: too many attributes, too large, bad destination', async () => {
    const queueUrl = await queues.create(unique('pub-bad'));
    const publisher = createSqsPublisher({
      clientConfig: sqsClientConfig(),
      maxMessageBytes: 2_048,
    });
    try {
      const tooMany = Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`h${i}`, 'v']));
      const results = await publisher.publish([
        message(queueUrl, 'ok-1'),
        message(queueUrl, 'attrs-1', null, tooMany),
        { ...message(queueUrl, 'big-1'), payload: text('x'.repeat(4_000)) },
        message('not a queue!', 'dest-1'),
        message(queueUrl, 'ok-2'),
      ]);
      expect(results.map((r) => r.ok)).toEqual([true, false, false, false, true]);
      const [attrs, big, dest] = failures(results);
      expect(hasErrorCode(attrs?.error, 'SQS_TOO_MANY_ATTRIBUTES')).toBe(true);
      expect(attrs?.error.message).toMatch(/11 message attributes .*allows 10/);
      expect(hasErrorCode(big?.error, 'SQS_MESSAGE_TOO_LARGE')).toBe(true);
      expect(hasErrorCode(dest?.error, 'SQS_INVALID_MESSAGE')).toBe(true);
      expect(failures(results).every((f) => f.retriable === false)).toBe(true);

      const received = await queues.receive(queueUrl, 2, 3);
      expect(received.map((m) => m.Body).sort()).toEqual(['body of ok-1', 'body of ok-2']);
    } finally {
      await publisher.close();
    }
  });

  it('sends again an entry SQS failed by a server fault, and delivers each message once', async () => {
    const queueUrl = await queues.create(unique('pub-retry'));
    // First request: SQS "fails" the entry of r-1 (it is not sent at all, as after a server
    // fault); the retry sends it alone, as the first entry of its request.
    const { client, calls } = tamperedClient((input, call) => {
      if (call !== 1) return;
      const dropped = input.Entries?.find((e) => e.MessageBody === 'body of r-1');
      input.Entries = input.Entries?.filter((e) => e !== dropped);
      return (output) => {
        output.Failed = [
          ...(output.Failed ?? []),
          { Id: dropped?.Id, SenderFault: false, Code: 'InternalError', Message: 'injected' },
        ];
      };
    });
    const publisher = createSqsPublisher({ client, backoff: { baseMs: 0, capMs: 0 } });
    try {
      const results = await publisher.publish([0, 1, 2].map((i) => message(queueUrl, `r-${i}`)));
      expect(failures(results)).toEqual([]);
      expect(calls()).toBe(2);
      const received = await queues.receive(queueUrl, 3, 3);
      expect(received.map((m) => m.Body).sort()).toEqual([
        'body of r-0',
        'body of r-1',
        'body of r-2',
      ]);
    } finally {
      await publisher.close();
      client.destroy();
    }
  });

  it("reports an entry SQS refuses as the sender's fault, non-retriable, and holds back its key", async () => {
    const queueUrl = await queues.create(unique('pub-refused'));
    // SQS itself refuses the entry: a delay above its 900-second maximum.
    const { client } = tamperedClient((input) => {
      for (const entry of input.Entries ?? []) {
        if (entry.MessageBody === 'body of s-1') entry.DelaySeconds = 5_000;
      }
    });
    // One request at a time: the two batches take two turns, so the key's messages stay
    // in call order, one in each batch (with more in flight they would share a request).
    const publisher = createSqsPublisher({ client, concurrency: 1 });
    try {
      const messages = Array.from({ length: 12 }, (_, i) =>
        message(queueUrl, `s-${i}`, i === 1 || i === 11 ? 'bad-key' : `k${i}`),
      );
      const results = await publisher.publish(messages);
      const failed = failures(results);
      expect(failed.map((f) => f.messageId)).toEqual(['s-1', 's-11']);
      expect(failed[0]).toMatchObject({ retriable: false });
      expect(failed[0]?.error).toMatchObject({
        code: 'SQS_PUBLISH_FAILED',
        details: { sqsCode: 'InvalidParameterValue', senderFault: true },
      });
      // s-11 sits in the second batch, behind the failure of its key in the first.
      expect(failed[1]).toMatchObject({ retriable: true });
      expect(failed[1]?.error.message).toMatch(/held back/);
      expect(await queues.receive(queueUrl, 10, 5)).toHaveLength(10);
    } finally {
      await publisher.close();
      client.destroy();
    }
  });

  it('reports a missing queue (by URL or by name) as an outage: retriable, never charged', async () => {
    const publisher = createSqsPublisher({ clientConfig: sqsClientConfig() });
    const byUrl = (await queues.create(unique('pub-gone'))).replace(/[^/]+$/, unique('gone'));
    try {
      const results = await publisher.publish([
        message(byUrl, 'gone-1'),
        message(byUrl, 'gone-2'),
        message(unique('no-such-queue'), 'gone-3'),
      ]);
      const failed = failures(results);
      expect(failed).toHaveLength(3);
      expect(failed.every((f) => f.outage === true && f.retriable)).toBe(true);
      expect(hasErrorCode(failed[0]?.error, 'SQS_PUBLISH_FAILED')).toBe(true);
      expect(hasErrorCode(failed[2]?.error, 'SQS_QUEUE_UNAVAILABLE')).toBe(true);
    } finally {
      await publisher.close();
    }
  });

  it('gives up a request SQS does not answer after timeouts.requestMs, as an outage', async () => {
    // A server that accepts connections and never answers: a partition seen from the client.
    const sockets = new Set<Socket>();
    const silent = createServer((socket) => void sockets.add(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const { port } = silent.address() as AddressInfo;
    const endpoint = `http://127.0.0.1:${port}`;
    const publisher = createSqsPublisher({
      clientConfig: { ...sqsClientConfig(), endpoint },
      timeouts: { requestMs: 500 },
      maxAttempts: 3,
    });
    try {
      const started = Date.now();
      const queueUrl = `${endpoint}/000000000000/silent`;
      // Two requests: after a timeout nothing is sent again within the call (maxAttempts
      // would otherwise triple the wait), so the call ends after one limit.
      const results = await publisher.publish(
        Array.from({ length: 12 }, (_, i) => message(queueUrl, `silent-${i}`)),
      );
      const elapsed = Date.now() - started;
      expect(elapsed).toBeGreaterThanOrEqual(450);
      expect(elapsed).toBeLessThan(1_200);
      const failed = failures(results);
      expect(failed).toHaveLength(12);
      expect(failed.every((f) => f.outage === true && f.retriable)).toBe(true);
      expect(hasErrorCode(failed[0]?.error.cause, 'SQS_TIMEOUT')).toBe(true);
    } finally {
      await publisher.close();
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => silent.close(resolve));
    }
  });

  it('ends the call when the lookup of a queue name times out: the URL destination is not sent', async () => {
    const sockets = new Set<Socket>();
    const silent = createServer((socket) => void sockets.add(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const { port } = silent.address() as AddressInfo;
    const endpoint = `http://127.0.0.1:${port}`;
    const warnings: string[] = [];
    const logger = {
      debug: () => undefined,
      info: () => undefined,
      warn: (message: string) => void warnings.push(message),
      error: () => undefined,
    };
    const publisher = createSqsPublisher({
      clientConfig: { ...sqsClientConfig(), endpoint },
      timeouts: { requestMs: 800 },
      logger,
    });
    try {
      const started = Date.now();
      const results = await publisher.publish([
        message(`${endpoint}/000000000000/silent`, 'by-url'),
        message('silent-by-name', 'by-name'),
      ]);
      const elapsed = Date.now() - started;
      // One limit (the lookup), not a second one for the request to the URL.
      expect(elapsed).toBeLessThan(1_200);
      const failed = failures(results);
      expect(failed.map((f) => f.messageId)).toEqual(['by-url', 'by-name']);
      expect(failed.every((f) => f.outage === true && f.retriable)).toBe(true);
      expect(warnings).toEqual([
        'sqs publisher: SQS did not take a request; its events stay pending and the relay retries them',
      ]);
    } finally {
      await publisher.close();
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => silent.close(resolve));
    }
  });

  it('carries outbox events through the relay to a consumer that dedupes a re-publish', async () => {
    const queueUrl = await queues.create(unique('relay'));
    const consumer = unique('c');
    const outbox = createOutbox({ store });
    const ids = await store.knex.transaction((trx) =>
      outbox.add(trx, [
        { destination: queueUrl, key: 'order-7', payload: { n: 1 }, headers: { tenant: 'acme' } },
        { destination: queueUrl, key: 'order-7', payload: { n: 2 } },
      ]),
    );
    const publisher = createSqsPublisher({ clientConfig: sqsClientConfig() });
    const sent: OutgoingMessage[] = [];
    const recording: Publisher = {
      publish: async (messages) => {
        sent.push(...messages);
        return publisher.publish(messages);
      },
      close: () => publisher.close(),
    };
    const relay = createRelay({ store, publisher: recording, notify: false });
    const settled: SettledEvent<unknown, Message>[] = [];
    const sqsConsumer = createSqsConsumer({
      clientConfig: sqsClientConfig(),
      queueUrl,
      waitTimeSeconds: 1,
      inbox: createInbox({ store, consumer }),
      handler: async (ctx) => {
        await ctx.trx.raw(
          `insert into ${store.effectsTable} (consumer, message_id, note) values (?, ?, ?)`,
          [consumer, ctx.messageId, ctx.scope],
        );
      },
      onSettled: (event) => settled.push(event),
    });
    try {
      expect(await relay.runOnce()).toMatchObject({ published: 2 });
      // A relay that crashed before marking would publish the same event again.
      expect(sent.map((m) => m.messageId)).toEqual(ids);
      expect(failures(await publisher.publish([sent[0]!]))).toEqual([]);
      await sqsConsumer.start();
      await waitFor('three settled messages', () => settled.length === 3, {
        timeoutMs: 20_000,
        intervalMs: 100,
      });
      const counts = await store.effectCounts(consumer);
      expect(Object.fromEntries(counts)).toEqual({ [ids[0]!]: 1, [ids[1]!]: 1 });
      expect((await store.effects(consumer)).find((e) => e.messageId === ids[0])?.note).toBe(
        'acme',
      );
      expect(settled.filter((e) => e.outcome?.status === 'duplicate')).toHaveLength(1);
    } finally {
      await sqsConsumer.stop();
      await publisher.close();
    }
  });
});
