/**
 * ElasticMQ killed (SIGKILL) under load and started again, on a private server (the other test
 * files keep the shared one). ElasticMQ keeps queues and messages in memory only: after the
 * restart the queue is gone. The test re-creates it once the server answers, as a deployment's
 * provisioning would; until then the relay's sends and the consumer's receives fail with
 * `QueueDoesNotExist`: an outage, never the events' or the messages' fault (the publisher
 * reports it as one, so the relay retries without charging attempts; the consumer warns once
 * and backs off).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { CreateQueueCommand, SQSClient } from '@aws-sdk/client-sqs';
import { createInbox, type Logger } from '@justonce/core';
import { createSqsPublisher, createSqsConsumer } from '../src';
import { checkSqs, sqsClientSettings } from '../../../services/checks';
import { startPrivateElasticmq, type PrivateElasticmq } from '../../../services/private';
import {
  decodeLoad,
  feed,
  loadHandler,
  loadRelay,
  newClock,
  openLoadStore,
  recoveryAfter,
  runCleanup,
  settle,
  timedPublisher,
} from '../../../test-support/restart-load';
import { unique } from './support';

jest.setTimeout(120_000);

const EVENTS = 300;
const FEED_MS = 10_000;
const KILL_AFTER_MS = 3000;
const RECOVERY_BOUND_MS = 30_000;

let server: PrivateElasticmq;
let sqs: SQSClient;
const cleanup: Array<() => Promise<unknown>> = [];

beforeAll(async () => {
  server = await startPrivateElasticmq(60_000);
  cleanup.push(() => server.dispose());
  sqs = new SQSClient(sqsClientSettings(server.endpoint));
  cleanup.push(async () => sqs.destroy());
});

afterAll(() => runCleanup(cleanup));

/** Warnings from the transport end up in the report. */
function collectingLogger(lines: string[]): Logger {
  const note = (level: string) => (message: string) => void lines.push(`${level}: ${message}`);
  return {
    debug: () => undefined,
    info: () => undefined,
    warn: note('warn'),
    error: note('error'),
  };
}

async function createQueue(name: string): Promise<string> {
  const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: name }));
  if (!QueueUrl) throw new Error(`no URL for queue ${name}`);
  return QueueUrl;
}

/**
 * Kills the server mid-load, starts it again and re-creates the queue. `answeredAt` is the
 * first moment it listed queues again.
 */
async function killAndRestart(
  queue: string,
): Promise<{ killedAt: number; deadAt: number; answeredAt: number }> {
  await sleep(KILL_AFTER_MS);
  const killedAt = Date.now();
  await server.kill();
  const deadAt = Date.now();
  let answeredAt: number | undefined;
  let starting = true;
  const watching = (async () => {
    while (starting && answeredAt === undefined) {
      if ((await checkSqs(server.endpoint)).ok) answeredAt = Date.now();
      else await sleep(100);
    }
  })();
  try {
    await server.start();
  } finally {
    starting = false;
    await watching;
  }
  await createQueue(queue);
  return { killedAt, deadAt, answeredAt: answeredAt ?? Date.now() };
}

describe('ElasticMQ killed under load and started again (queues in memory: gone)', () => {
  it('after the queue is re-created: only messages the server held are lost; nothing doubled or dead', async () => {
    const queue = unique('restart');
    const queueUrl = await createQueue(queue);
    const store = await openLoadStore();
    cleanup.push(() => store.dispose());
    const clock = newClock();
    const log: string[] = [];
    const logger = collectingLogger(log);
    const clientConfig = { ...sqsClientSettings(server.endpoint), maxAttempts: 1 };
    const sqsConsumer = createSqsConsumer({
      clientConfig,
      queueUrl,
      waitTimeSeconds: 1,
      inbox: createInbox({ store, consumer: 'restart-test', decode: decodeLoad }),
      handler: loadHandler(store, clock),
      logger,
    });
    cleanup.push(() => sqsConsumer.stop());
    await sqsConsumer.start();
    const publisher = createSqsPublisher({ clientConfig, logger });
    cleanup.push(() => publisher.close());
    const relay = loadRelay(store, timedPublisher(publisher, clock));
    cleanup.push(() => relay.stop());
    await relay.start();

    const feeding = feed(store, queueUrl, EVENTS, FEED_MS);
    const { killedAt, deadAt, answeredAt } = await killAndRestart(queue);
    const ids = await feeding;
    const outcome = await settle(store, EVENTS, 45_000);
    const charged = (await store.knex.raw(
      `select coalesce(max(attempts), 0)::int as n from ${store.names.table('outbox')}`,
    )) as { rows: Array<{ n: number }> };
    const recovery = recoveryAfter(clock, answeredAt);
    // What the restart can lose: messages the server accepted before the kill that the consumer
    // had not received yet. The outbox marked them published; nothing publishes them again.
    const acceptedBefore = new Set(
      clock.published.filter((p) => p.at <= deadAt).map((p) => p.messageId),
    );
    const handled = new Set(clock.handled.map((h) => h.messageId));
    const missing = ids.filter((id) => !handled.has(id));
    console.log(
      JSON.stringify({
        test: 'elasticmq-sigkill-queues-gone',
        ...outcome,
        maxOutboxAttempts: charged.rows[0]!.n,
        outageMs: answeredAt - killedAt,
        // When each lost message was accepted, in ms relative to the kill.
        lostAcceptedAtMs: missing.map(
          (id) => (clock.published.find((p) => p.messageId === id)?.at ?? NaN) - killedAt,
        ),
        ...recovery,
        transportLog: [...new Set(log)].slice(0, 5),
      }),
    );
    expect(missing.every((id) => acceptedBefore.has(id))).toBe(true);
    expect(outcome.lost).toBe(missing.length);
    expect(outcome).toMatchObject({ doubled: 0, dead: 0, deadLetters: 0 });
    // The queue gone with the server is an outage: no event was charged an attempt.
    expect(charged.rows[0]!.n).toBe(0);
    expect(recovery.firstPublishMs).not.toBeNull();
    expect(recovery.firstPublishMs!).toBeLessThan(RECOVERY_BOUND_MS);
    expect(recovery.firstHandledMs).not.toBeNull();
    expect(recovery.firstHandledMs!).toBeLessThan(RECOVERY_BOUND_MS);
  });
});
