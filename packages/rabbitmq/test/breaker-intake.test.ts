/**
 * The `resilience` breaker stops the intake (docs/load-shedding.md): while it is open the
 * consumer is cancelled on the broker (no consumer on the queue, new messages stay ready),
 * and after its open interval it consumes again by itself; nothing is dead-lettered and each
 * message is handled once.
 */
import { createDeadLetters, createInbox, type Logger } from '@justonce/core';
import { createRabbitConsumer } from '../src';
import { waitFor } from '../../../test-support/wait-for';
import { amqpUrl, uniqueName } from './broker';
import { effectCounts, EventLog, useRabbitTestBed, writeEffect } from './support';

jest.setTimeout(30_000);

const bed = useRabbitTestBed();

/** A downstream of the handler that does not answer. */
class DownstreamDown extends Error {
  constructor() {
    super('the downstream does not answer');
    this.name = 'DownstreamDown';
  }
}

/** A logger that keeps each line's level and message. */
function recordingLogger(): { logger: Logger; lines: Array<[string, string]> } {
  const lines: Array<[string, string]> = [];
  const at =
    (level: string) =>
    (message: string): void => {
      lines.push([level, message]);
    };
  return {
    lines,
    logger: { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') },
  };
}

it('cancels the consumer while the breaker is open, then consumes again: each message once, none dead', async () => {
  const { store, admin, running } = bed;
  const queue = uniqueName('breaker-intake');
  const consumerName = `breaker-intake-${process.pid}-${Date.now()}`;
  const log = new EventLog();
  const { logger, lines } = recordingLogger();
  let down = true;
  const consumer = createRabbitConsumer({
    url: amqpUrl(),
    queue,
    inbox: createInbox({ store, consumer: consumerName, backoff: { baseMs: 50, capMs: 100 } }),
    retry: { delaysMs: [100] },
    storeRetry: { baseMs: 50, capMs: 200 },
    resilience: { breaker: { trip: { consecutiveFailures: 2 }, openMs: 1_500 }, budget: false },
    logger,
    handler: async (ctx) => {
      if (down) throw new DownstreamDown();
      await writeEffect(ctx.trx, store, ctx.messageId);
    },
    ...log.hooks,
  });
  running.push(consumer);
  await consumer.start();
  const send = (id: string): void => {
    admin.channel.sendToQueue(queue, Buffer.from(id), { persistent: true, messageId: id });
  };

  const first = ['trip-0', 'trip-1'];
  first.forEach(send);
  await waitFor('no consumer on the queue', async () =>
    (await admin.channel.checkQueue(queue)).consumerCount === 0 ? true : undefined,
  );
  const later = Array.from({ length: 4 }, (_, i) => `later-${i}`);
  later.forEach(send);
  // Cancelled: what comes now stays ready in the queue, nobody takes it.
  await new Promise((resolve) => setTimeout(resolve, 300));
  const whileOpen = await admin.channel.checkQueue(queue);
  expect(whileOpen.consumerCount).toBe(0);
  expect(whileOpen.messageCount).toBeGreaterThanOrEqual(later.length);

  down = false;
  const ids = [...first, ...later];
  const counts = await waitFor(
    'every message handled',
    async () => {
      const now = await effectCounts(store);
      return ids.every((id) => now[id] !== undefined) ? now : undefined;
    },
    { timeoutMs: 15_000, intervalMs: 100 },
  );
  for (const id of ids) expect(counts[id]).toBe(1);
  expect((await admin.channel.checkQueue(queue)).consumerCount).toBe(1);
  // Taken before the cancel: held or sent to a retry queue, never nacked nor dead-lettered.
  const settledAs = new Set(log.settled().map((e) => e.action));
  expect([...settledAs].filter((a) => !['acked', 'held', 'redelivered'].includes(a))).toEqual([]);
  expect(await createDeadLetters(store).list({ consumer: consumerName })).toEqual([]);
  expect(await admin.depth(consumer.topology().deadLetterQueue!)).toBe(0);
  // One warning for the open, none of a store outage, no error per held delivery.
  const opens = lines.filter(([, m]) => m.startsWith(`circuit open for consumer ${consumerName}`));
  expect(opens.length).toBeGreaterThanOrEqual(1);
  expect(opens.every(([level]) => level === 'warn')).toBe(true);
  expect(lines.filter(([, m]) => m.includes('store is unavailable'))).toEqual([]);
  expect(lines.filter(([level]) => level === 'error')).toEqual([]);
});
