/**
 * A network partition to RabbitMQ under load, on a private node (the other test files keep the
 * shared server): the kernel's firewall drops every packet to and from the node's AMQP port,
 * so both ends see a half-open connection (no reset, no error), for longer than every time
 * limit the test sets small; then the partition heals. A relay publishes events added at a
 * steady rate through the RabbitMQ publisher; a consumer handles them through the inbox on
 * the shared PostgreSQL. The consumer and the publisher must each notice within their limits
 * (heartbeat, confirm timeout) and say so once, nothing may die, and the flow must resume
 * within a few seconds of the heal.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { createInbox } from '@justonce/core';
import { createRabbitConsumer, createRabbitPublisher } from '../src';
import { startPrivateRabbitmq } from '../../../services/private';
import type { RabbitmqNode } from '../../../services/rabbitmq';
import { firstLineAfter, recordingLogger, type LogLine } from '../../../test-support/log-lines';
import {
  healAll,
  partitionOf,
  partitionUnavailable,
  type Partition,
} from '../../../test-support/partition';
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
import { uniqueName } from './broker';

jest.setTimeout(120_000);

const EVENTS = 400;
const FEED_MS = 20_000;
const CUT_AFTER_MS = 3_000;
const CUT_FOR_MS = 10_000;

/** The time limits, set small so that a 10 s partition outlasts every one of them. */
const LIMITS = {
  heartbeatSeconds: 2,
  connectTimeoutMs: 2_000,
  operationTimeoutMs: 2_000,
  confirmTimeoutMs: 3_000,
  reconnect: { baseMs: 100, capMs: 1_000 },
} as const;
/** amqplib declares a connection dead after two to three silent heartbeat intervals. */
const HEARTBEAT_NOTICE_MS = 3 * LIMITS.heartbeatSeconds * 1000;
/** Timers and the event loop are late by a little under load. */
const MARGIN_MS = 1_500;
const RECOVERY_BOUND_MS = 5_000;

let node: RabbitmqNode;
const cleanup: Array<() => Promise<unknown>> = [];

beforeAll(async () => {
  node = await startPrivateRabbitmq(60_000);
  cleanup.push(() => node.dispose());
});

afterAll(async () => {
  await healAll();
  await runCleanup(cleanup);
});

describe('RabbitMQ partitioned from the consumer and the relay under load', () => {
  it('each notices within its limit, nothing dies, and the flow resumes after the heal', async () => {
    const unavailable = await partitionUnavailable();
    if (unavailable !== undefined) {
      throw new Error(`cannot play a network partition on this machine: ${unavailable}`);
    }
    const partition: Partition = partitionOf(Number(new URL(node.url).port));
    const queue = uniqueName('partition');
    const store = await openLoadStore();
    cleanup.push(() => store.dispose());
    const clock = newClock();
    const consumerLog: LogLine[] = [];
    const publisherLog: LogLine[] = [];
    const consumer = createRabbitConsumer({
      url: node.url,
      queue,
      inbox: createInbox({ store, consumer: 'partition-test', decode: decodeLoad }),
      handler: loadHandler(store, clock),
      logger: recordingLogger(consumerLog),
      ...LIMITS,
    });
    cleanup.push(() => consumer.stop());
    await consumer.start();
    const publisher = createRabbitPublisher({
      url: node.url,
      logger: recordingLogger(publisherLog),
      ...LIMITS,
    });
    cleanup.push(() => publisher.close());
    const relay = loadRelay(store, timedPublisher(publisher, clock));
    cleanup.push(() => relay.stop());
    await relay.start();

    const feeding = feed(store, queue, EVENTS, FEED_MS);
    await sleep(CUT_AFTER_MS);
    const cutAt = Date.now();
    await partition.cut();
    await sleep(CUT_FOR_MS);
    // From the start of the heal: the first rule removed may already let a connection through.
    const healedAt = Date.now();
    await partition.heal();
    await feeding;
    const outcome = await settle(store, EVENTS, 60_000);
    const recovery = recoveryAfter(clock, healedAt);

    const consumerLost = firstLineAfter(consumerLog, cutAt, {
      message: 'rabbitmq consumer lost its connection',
    });
    const publisherLost = firstLineAfter(publisherLog, cutAt, {
      message: 'rabbitmq publisher lost its channel',
    });
    const consumerBack = firstLineAfter(consumerLog, cutAt, {
      message: 'rabbitmq consumer reconnected',
    });
    const publisherBack = firstLineAfter(publisherLog, cutAt, {
      message: 'rabbitmq publisher reconnected',
    });
    const warnings = (lines: readonly LogLine[]) =>
      lines.filter((line) => line.level !== 'info').map((line) => line.message);
    const report = {
      test: 'rabbitmq-network-partition',
      ...outcome,
      cutForMs: healedAt - cutAt,
      consumerNoticedMs: consumerLost ? consumerLost.at - cutAt : null,
      consumerCause: consumerLost?.fields.error,
      publisherNoticedMs: publisherLost ? publisherLost.at - cutAt : null,
      publisherCause: publisherLost?.fields.error,
      consumerReconnectedMs: consumerBack ? consumerBack.at - healedAt : null,
      publisherReconnectedMs: publisherBack ? publisherBack.at - healedAt : null,
      ...recovery,
      consumerWarnings: warnings(consumerLog),
      publisherWarnings: warnings(publisherLog),
    };
    console.log(JSON.stringify(report));

    expect(outcome).toMatchObject({ lost: 0, doubled: 0, dead: 0, deadLetters: 0 });
    // Each noticed within its own limit: the consumer's heartbeat; the publisher's confirm
    // timeout (the relay is always publishing) or heartbeat, whichever fired first.
    expect(report.consumerNoticedMs).not.toBeNull();
    expect(report.consumerNoticedMs!).toBeLessThan(HEARTBEAT_NOTICE_MS + MARGIN_MS);
    expect(report.publisherNoticedMs).not.toBeNull();
    expect(report.publisherNoticedMs!).toBeLessThan(
      Math.min(HEARTBEAT_NOTICE_MS, LIMITS.confirmTimeoutMs) + MARGIN_MS,
    );
    // Said once per outage, not once per failed reconnection attempt or message.
    expect(report.consumerWarnings).toEqual([
      'rabbitmq consumer lost its connection; reconnecting',
    ]);
    expect(report.publisherWarnings).toEqual(['rabbitmq publisher lost its channel; reconnecting']);
    // Both said when they were back, and the flow resumed within a few seconds of the heal.
    expect(report.consumerReconnectedMs).not.toBeNull();
    expect(report.publisherReconnectedMs).not.toBeNull();
    expect(recovery.firstPublishMs).not.toBeNull();
    expect(recovery.firstPublishMs!).toBeLessThan(RECOVERY_BOUND_MS);
    expect(recovery.firstHandledMs).not.toBeNull();
    expect(recovery.firstHandledMs!).toBeLessThan(RECOVERY_BOUND_MS);
  });
});
