/**
 * A network partition to Kafka under load: every packet to and from a private broker's client
 * port is dropped by the kernel's firewall (connections stay open, nothing answers), then let
 * through again. A relay publishes events added at a steady rate through the Kafka publisher; a
 * consumer group handles them through the inbox. Both must say within their time limits that
 * they cannot reach the broker, lose and double nothing, charge and dead-letter nothing, and
 * flow again within seconds of the heal.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { createInbox } from '@justonce/core';
import { Kafka, logLevel } from 'kafkajs';
import { createKafkaConsumer, createKafkaPublisher } from '../src';
import { startPrivateKafka, type PrivateKafka } from '../../../services/private';
import { msUntilLine, recordingLogger, type LogLine } from '../../../test-support/log-lines';
import { healAll, partitionOf, partitionUnavailable } from '../../../test-support/partition';
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
import { createTopics, unique } from './support';

jest.setTimeout(90_000);

/** The limits set small here, so that a 15 s cut outlasts every one of them. */
const TIMEOUTS = { connectMs: 1_000, requestMs: 3_000 };
const GROUP = {
  sessionTimeout: 8_000,
  rebalanceTimeout: 8_000,
  heartbeatInterval: 1_000,
  maxWaitTimeInMs: 200,
};
const SEND_TIMEOUT_MS = 4_000;
const EVENTS = 300;
const FEED_MS = 24_000;
const CUT_AFTER_MS = 3_000;
const CUT_MS = 15_000;
/** Room for a timer tick, a heartbeat in between and a loaded machine. */
const MARGIN_MS = 2_000;
/** The consumer notices at the first request that times out: a heartbeat or a fetch. */
const CONSUMER_NOTICE_BOUND_MS =
  TIMEOUTS.requestMs + GROUP.heartbeatInterval + GROUP.maxWaitTimeInMs + MARGIN_MS;
/** The relay's publish call comes back as an outage after the publisher's send limit. */
const RELAY_NOTICE_BOUND_MS = SEND_TIMEOUT_MS + MARGIN_MS;
const RECOVERY_BOUND_MS = 8_000;

let broker: PrivateKafka;
let unavailable: string | undefined;
const cleanup: Array<() => Promise<unknown>> = [];

beforeAll(async () => {
  unavailable = await partitionUnavailable();
  if (unavailable !== undefined) return;
  broker = await startPrivateKafka(60_000);
  cleanup.push(() => broker.dispose());
});

afterAll(async () => {
  await healAll();
  await runCleanup(cleanup);
});

describe('a network partition to Kafka under load', () => {
  it('is noticed within the limits, loses and doubles nothing, and flows again after the heal', async () => {
    if (unavailable !== undefined) {
      throw new Error(`cannot play a network partition here: ${unavailable}`);
    }
    const topic = unique('partition');
    const admin = new Kafka({
      clientId: unique('partition-admin'),
      brokers: [broker.broker],
      logLevel: logLevel.NOTHING,
    }).admin();
    await admin.connect();
    await createTopics(admin, [topic], 3);
    await admin.disconnect();

    const store = await openLoadStore();
    cleanup.push(() => store.dispose());
    const clock = newClock();
    const consumerLog: LogLine[] = [];
    const publisherLog: LogLine[] = [];
    const publisher = createKafkaPublisher({
      brokers: [broker.broker],
      timeouts: TIMEOUTS,
      ackTimeoutMs: 2_000,
      sendTimeoutMs: SEND_TIMEOUT_MS,
      logger: recordingLogger(publisherLog),
    });
    cleanup.push(() => publisher.close());
    const relay = loadRelay(store, timedPublisher(publisher, clock));
    cleanup.push(() => relay.stop());
    const consumer = createKafkaConsumer({
      brokers: [broker.broker],
      timeouts: TIMEOUTS,
      groupId: unique('partition-group'),
      topics: [topic],
      fromBeginning: true,
      consumerConfig: GROUP,
      inbox: createInbox({ store, consumer: 'partition-test', decode: decodeLoad }),
      handler: loadHandler(store, clock),
      logger: recordingLogger(consumerLog),
    });
    cleanup.push(() => consumer.stop());
    await consumer.start();
    await relay.start();

    const cut = partitionOf(broker.node.port);
    const feeding = feed(store, topic, EVENTS, FEED_MS);
    await sleep(CUT_AFTER_MS);
    await cut.cut();
    const cutAt = Date.now();
    await sleep(CUT_MS);
    await cut.heal();
    const healedAt = Date.now();
    await feeding;
    const outcome = await settle(store, EVENTS, 30_000);
    const recovery = recoveryAfter(clock, healedAt);
    const figures = {
      test: 'kafka-network-partition',
      ...outcome,
      cutMs: healedAt - cutAt,
      consumerNoticeMs: msUntilLine(consumerLog, cutAt, { message: /cannot reach the broker/ }),
      relayNoticeMs: msUntilLine(publisherLog, cutAt, { message: /cannot reach the broker/ }),
      consumerBackMs: msUntilLine(consumerLog, healedAt, { message: /reaches the broker again/ }),
      relayBackMs: msUntilLine(publisherLog, healedAt, { message: /reaches the broker again/ }),
      ...recovery,
      publishedDuringCut: clock.published.filter((p) => p.at > cutAt && p.at < healedAt).length,
      consumerLog: consumerLog.map((l) => `${l.at - cutAt} ${l.level}: ${l.message}`),
      publisherLog: publisherLog.map((l) => `${l.at - cutAt} ${l.level}: ${l.message}`),
    };
    console.log(JSON.stringify(figures));

    expect(outcome).toMatchObject({ lost: 0, doubled: 0, dead: 0, deadLetters: 0 });
    expect(figures.consumerNoticeMs).not.toBeNull();
    expect(figures.consumerNoticeMs!).toBeLessThan(CONSUMER_NOTICE_BOUND_MS);
    expect(figures.relayNoticeMs).not.toBeNull();
    expect(figures.relayNoticeMs!).toBeLessThan(RELAY_NOTICE_BOUND_MS);
    // One warning per outage, not one per failed request or relay cycle. The publisher may
    // warn once more right after the heal: a send begun on a connection from before the cut
    // can still time out once, which is a second, short outage of its own.
    const warnings = (lines: LogLine[]) =>
      lines.filter((l) => /cannot reach the broker/.test(l.message)).length;
    expect(warnings(consumerLog)).toBe(1);
    expect(warnings(publisherLog)).toBeGreaterThanOrEqual(1);
    expect(warnings(publisherLog)).toBeLessThanOrEqual(2);
    expect(figures.consumerBackMs).not.toBeNull();
    expect(figures.relayBackMs).not.toBeNull();
    expect(recovery.firstPublishMs).not.toBeNull();
    expect(recovery.firstPublishMs!).toBeLessThan(RECOVERY_BOUND_MS);
    expect(recovery.firstHandledMs).not.toBeNull();
    expect(recovery.firstHandledMs!).toBeLessThan(RECOVERY_BOUND_MS);
  });
});
