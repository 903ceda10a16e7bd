/**
 * Kafka killed (SIGKILL) under load and restarted with its data gone, on a private broker (the
 * other test files keep the shared one). A relay publishes events added at a steady rate; a
 * consumer group handles them through the inbox. The restart keeping its data is the consumer
 * contract's `restart` clause (consumer-contract.test.ts); this one is Kafka's own: what a
 * wiped broker may lose is what it acknowledged before the kill and nobody handled.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { createInbox, type Logger, type Relay } from '@justonce/core';
import { Kafka, logLevel } from 'kafkajs';
import {
  createKafkaConsumer,
  createKafkaPublisher,
  type KafkaClient,
  type KafkaClientName,
  type KafkaConsumer,
} from '../src';
import { checkKafka } from '../../../services/checks';
import { startPrivateKafka, type PrivateKafka } from '../../../services/private';
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
  type LoadClock,
  type LoadStore,
} from '../../../test-support/restart-load';
import { CLIENTS, FAST_GROUP, clientUnderTest, createTopics, unique } from './support';

jest.setTimeout(120_000);

const EVENTS = 300;
const FEED_MS = 10_000;
const KILL_AFTER_MS = 3000;
const RECOVERY_BOUND_MS = 30_000;

let broker: PrivateKafka;
const cleanup: Array<() => Promise<unknown>> = [];

beforeAll(async () => {
  broker = await startPrivateKafka(60_000);
  cleanup.push(() => broker.dispose());
});

afterAll(() => runCleanup(cleanup));

/** Warnings from the transport (producer rebuilds, consumer crashes) end up in the report. */
function collectingLogger(lines: string[]): Logger {
  const note = (level: string) => (message: string) => void lines.push(`${level}: ${message}`);
  return {
    debug: () => undefined,
    info: () => undefined,
    warn: note('warn'),
    error: note('error'),
  };
}

interface Running {
  store: LoadStore;
  clock: LoadClock;
  relay: Relay;
  consumer: KafkaConsumer;
  log: string[];
}

async function startLoad(client: KafkaClientName, topic: string): Promise<Running> {
  const kafka = new Kafka({
    clientId: unique('restart'),
    brokers: [broker.broker],
    logLevel: logLevel.NOTHING,
  });
  const admin = kafka.admin();
  await admin.connect();
  await createTopics(admin, [topic], 3);
  await admin.disconnect();
  const store = await openLoadStore();
  cleanup.push(() => store.dispose());
  const clock = newClock();
  const log: string[] = [];
  const logger = collectingLogger(log);
  const clientOf = (): KafkaClient => clientUnderTest(client, { kafka, brokers: [broker.broker] });
  const publisher = createKafkaPublisher({ kafka: clientOf(), logger });
  cleanup.push(() => publisher.close());
  const relay = loadRelay(store, timedPublisher(publisher, clock));
  cleanup.push(() => relay.stop());
  const consumer = createKafkaConsumer({
    kafka: clientOf(),
    groupId: unique('restart-group'),
    topics: [topic],
    fromBeginning: true,
    consumerConfig: FAST_GROUP,
    inbox: createInbox({ store, consumer: 'restart-test', decode: decodeLoad }),
    handler: loadHandler(store, clock),
    logger,
  });
  cleanup.push(() => consumer.stop());
  await consumer.start();
  await relay.start();
  return { store, clock, relay, consumer, log };
}

/**
 * Creates `topic` again on the wiped broker as soon as it answers, as a deploy would: the
 * broker lost its topics with its data, auto-creation would give the broker's default
 * partition count, and @platformatic/kafka 2.12's group leader throws inside the library on a
 * subscribed topic its metadata lacks. Best effort: a producer may have auto-created it first.
 */
async function recreateTopic(topic: string): Promise<void> {
  const admin = new Kafka({
    clientId: unique('recreate'),
    brokers: [broker.broker],
    logLevel: logLevel.NOTHING,
  }).admin();
  try {
    await admin.connect();
    await admin.createTopics({ topics: [{ topic, numPartitions: 3, replicationFactor: 1 }] });
  } catch {
    // Already there (auto-created), or the broker is still warming up: the load goes on.
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
}

/**
 * Kills the broker mid-load and restarts it with an empty data directory. `answeredAt` is the
 * first moment it served metadata again (polled alongside the start, which goes on to warm up
 * the group coordinator); `topic` is created again at that moment.
 */
async function killAndRestart(
  topic: string,
): Promise<{ killedAt: number; deadAt: number; answeredAt: number }> {
  await sleep(KILL_AFTER_MS);
  const killedAt = Date.now();
  await broker.kill();
  const deadAt = Date.now();
  let answeredAt: number | undefined;
  let starting = true;
  const watching = (async () => {
    while (starting && answeredAt === undefined) {
      if ((await checkKafka([broker.broker])).ok) answeredAt = Date.now();
      else await sleep(100);
    }
    if (answeredAt !== undefined) await recreateTopic(topic);
  })();
  try {
    await broker.start({ keepData: false });
  } finally {
    starting = false;
    await watching;
  }
  return { killedAt, deadAt, answeredAt: answeredAt ?? Date.now() };
}

describe.each(CLIENTS)('Kafka killed under load, on %s', (client) => {
  it('restarted with its data gone: only records the broker acknowledged and lost are missing; nothing doubled or dead', async () => {
    const topic = unique('restart-wipe');
    const run = await startLoad(client, topic);
    const feeding = feed(run.store, topic, EVENTS, FEED_MS);
    const { killedAt, deadAt, answeredAt } = await killAndRestart(topic);
    const ids = await feeding;
    const outcome = await settle(run.store, EVENTS, 45_000);
    const recovery = recoveryAfter(run.clock, answeredAt);
    // What a wiped broker can lose: records it acknowledged before the kill that no consumer
    // had handled yet. The outbox marked them published; nothing publishes them again.
    const ackedBefore = new Set(
      run.clock.published.filter((p) => p.at <= deadAt).map((p) => p.messageId),
    );
    const handled = new Set(run.clock.handled.map((h) => h.messageId));
    const missing = ids.filter((id) => !handled.has(id));
    const exposed = [...ackedBefore].filter(
      (id) => !run.clock.handled.some((h) => h.messageId === id && h.at < killedAt),
    );
    console.log(
      JSON.stringify({
        test: 'kafka-sigkill-data-gone',
        client,
        ...outcome,
        ackedUnhandledAtKill: exposed.length,
        outageMs: answeredAt - killedAt,
        ...recovery,
        transportLog: run.log.slice(0, 5),
      }),
    );
    expect(missing.every((id) => ackedBefore.has(id))).toBe(true);
    expect(outcome.lost).toBe(missing.length);
    expect(outcome).toMatchObject({ doubled: 0, dead: 0, deadLetters: 0 });
    expect(recovery.firstPublishMs).not.toBeNull();
    expect(recovery.firstPublishMs!).toBeLessThan(RECOVERY_BOUND_MS);
    expect(recovery.firstHandledMs).not.toBeNull();
    expect(recovery.firstHandledMs!).toBeLessThan(RECOVERY_BOUND_MS);
  });
});
