/**
 * The `resilience` breaker stops the intake (docs/load-shedding.md): while it is open the
 * consumer sends no `ReceiveMessage` (counted by a middleware on the client, SQS itself is
 * ElasticMQ) and the messages it refuses go back to SQS, visible again at the probe time
 * instead of kept hidden by the heartbeat; after the open interval it receives again by
 * itself. Nothing is lost or dead-lettered.
 */
import { GetQueueAttributesCommand, SQSClient } from '@aws-sdk/client-sqs';
import { createDeadLetters, createInbox, type Logger } from '@justonce/core';
import { createSqsConsumer } from '../src';
import { waitFor } from '../../../test-support/wait-for';
import { sqsClientConfig, unique, useSqsTestBed } from './support';

jest.setTimeout(30_000);

const bed = useSqsTestBed();
const OPEN_MS = 2_500;

/** A downstream of the handler that does not answer. */
class DownstreamDown extends Error {
  override readonly name = 'DownstreamDown';
}

/** A client that notes when each `ReceiveMessage` is sent. */
function countingClient(): { client: SQSClient; receives: number[] } {
  const client = new SQSClient(sqsClientConfig());
  const receives: number[] = [];
  client.middlewareStack.add(
    (next, context) => (args) => {
      if (context.commandName === 'ReceiveMessageCommand') receives.push(Date.now());
      return next(args);
    },
    { step: 'initialize', name: 'countReceives' },
  );
  return { client, receives };
}

it('sends no ReceiveMessage while the breaker is open and gives the refused messages back; flow resumes by itself', async () => {
  const { store, queues, consumers } = bed;
  const queueUrl = await queues.create(unique('breaker-intake'));
  const consumer = unique('c');
  const { client, receives } = countingClient();
  const warnings: string[] = [];
  const quiet = (): void => undefined;
  const logger: Logger = { debug: quiet, info: quiet, warn: (m) => warnings.push(m), error: quiet };
  const released: string[] = [];
  const receiveCounts = new Map<string, number>();
  let down = true;
  const sqsConsumer = createSqsConsumer({
    client,
    queueUrl,
    concurrency: 2,
    waitTimeSeconds: 1,
    logger,
    inbox: createInbox({ store, consumer, backoff: { baseMs: 50, capMs: 100 } }),
    resilience: { breaker: { trip: { consecutiveFailures: 2 }, openMs: OPEN_MS }, budget: false },
    handler: async (ctx) => {
      if (down) throw new DownstreamDown('the downstream does not answer');
      receiveCounts.set(ctx.messageId, ctx.message.delivery.receiveCount ?? 0);
      await ctx.trx.raw(`insert into ${store.effectsTable} (consumer, message_id) values (?, ?)`, [
        consumer,
        ctx.messageId,
      ]);
    },
    onSettled: (event) => {
      if (event.action === 'released' && event.messageId) released.push(event.messageId);
    },
  });
  consumers.push(sqsConsumer);
  await sqsConsumer.start();
  const ids = ['m-0', 'm-1', 'm-2', 'm-3'];
  await queues.send(
    queueUrl,
    ids.map((id) => ({ body: id, attributes: { 'message-id': id } })),
  );

  await waitFor('the breaker open', () => warnings.some((w) => w.startsWith('circuit open')), {
    timeoutMs: 10_000,
    intervalMs: 20,
  });
  const openedAt = Date.now();
  // A long poll already on its way may still end; none may start while the breaker is open.
  await new Promise((resolve) => setTimeout(resolve, OPEN_MS - 700));
  expect(receives.filter((at) => at > openedAt)).toEqual([]);
  // Not kept hidden by the heartbeat: the message sent to redelivery is visible meanwhile.
  const { Attributes } = await queues.sqs.send(
    new GetQueueAttributesCommand({
      QueueUrl: queueUrl,
      AttributeNames: ['ApproximateNumberOfMessages'],
    }),
  );
  expect(Number(Attributes?.ApproximateNumberOfMessages)).toBeGreaterThanOrEqual(1);
  expect(released.length).toBeGreaterThanOrEqual(1);

  down = false;
  await waitFor(
    'every message handled',
    async () => {
      const effects = await store.effectCounts(consumer);
      return ids.every((id) => effects.get(id) === 1) ? true : undefined;
    },
    { timeoutMs: 15_000 },
  );
  expect(receives.some((at) => at > openedAt + OPEN_MS - 100)).toBe(true);
  // The released messages came back from SQS: received again, not held in hand.
  for (const id of released) expect(receiveCounts.get(id)).toBeGreaterThan(1);
  expect(await createDeadLetters(store).list({ consumer })).toEqual([]);
  expect(warnings.filter((w) => w.includes('store is unavailable'))).toEqual([]);
  await sqsConsumer.stop({ timeoutMs: 5_000 });
  client.destroy();
});
