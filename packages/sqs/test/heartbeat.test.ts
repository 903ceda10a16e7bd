import { SQSClient } from '@aws-sdk/client-sqs';
import { resolveMeter, silentLogger } from '@justonce/core';
import { Heartbeat } from '../src/consumer/visibility/heartbeat';
import type { HeldMessage } from '../src/consumer/visibility/held-message';
import { createConsumerInstruments } from '../src/consumer/meter/instruments';
import { TestQueues, sqsClientConfig, unique } from './support';
import { waitFor } from '../../../test-support/wait-for';

let queues: TestQueues;

beforeAll(() => {
  queues = new TestQueues();
});

afterAll(async () => {
  await queues.dispose();
});

/** Receives `count` messages of `queueUrl` and holds them as the consumer would. */
async function hold(queueUrl: string, count: number): Promise<HeldMessage[]> {
  const messages = await queues.receive(queueUrl, count);
  return messages.map((message, seq) => ({
    seq,
    message,
    receiptHandle: message.ReceiptHandle!,
    controller: new AbortController(),
  }));
}

describe('visibility heartbeat (ElasticMQ)', () => {
  it('settles a message only once the extension on its way for it has landed', async () => {
    const queueUrl = await queues.create(unique('hb'));
    await queues.send(queueUrl, [{ body: 'a' }, { body: 'b' }]);
    const [extended, other] = await hold(queueUrl, 2);
    // Every extension reaches the broker 800 ms late.
    let sent = 0;
    let landed = 0;
    const client = new SQSClient(sqsClientConfig());
    client.middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName !== 'ChangeMessageVisibilityBatchCommand') return next(args);
        sent += 1;
        await new Promise((resolve) => setTimeout(resolve, 800));
        const result = await next(args);
        landed += 1;
        return result;
      },
      { step: 'initialize', name: 'lateExtensions' },
    );
    const heartbeat = new Heartbeat(
      client,
      queueUrl,
      30,
      100,
      10_000,
      silentLogger,
      createConsumerInstruments(resolveMeter(), queueUrl),
      () => undefined,
    );
    try {
      heartbeat.watch(extended!);
      heartbeat.start();
      await waitFor('an extension on its way', () => sent === 1, {
        timeoutMs: 5_000,
        intervalMs: 100,
      });
      heartbeat.unwatch(extended!);
      // Not in the beat: nothing to wait for.
      await heartbeat.settled(other!);
      expect(landed).toBe(0);
      // In the beat: a visibility set after this cannot be undone by it.
      await heartbeat.settled(extended!);
      expect(landed).toBe(1);
    } finally {
      heartbeat.stop();
      client.destroy();
    }
  });
});
