/**
 * A network partition between the apps and SQS: the kernel's firewall drops every packet to
 * and from a private ElasticMQ's port (no reset, no error) for longer than the time limits,
 * under load, with a relay publishing through the SQS publisher and a consumer consuming. Each
 * side must notice within its limit, keep going, and flow again within seconds of the heal;
 * nothing lost, doubled, dead or charged.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { CreateQueueCommand, SQSClient } from '@aws-sdk/client-sqs';
import { createInbox, createRelay } from '@justonce/core';
import { createSqsPublisher, createSqsConsumer } from '../src';
import { sqsClientSettings } from '../../../services/checks';
import { startPrivateElasticmq, type PrivateElasticmq } from '../../../services/private';
import { msUntilLine, recordingLogger, type LogLine } from '../../../test-support/log-lines';
import { healAll, partitionOf, partitionUnavailable } from '../../../test-support/partition';
import {
  decodeLoad,
  feed,
  loadHandler,
  newClock,
  openLoadStore,
  recoveryAfter,
  runCleanup,
  settle,
  timedPublisher,
} from '../../../test-support/restart-load';
import { unique } from './support';

jest.setTimeout(90_000);

const EVENTS = 300;
const FEED_MS = 14_000;
const CUT_AFTER_MS = 3_000;
const CUT_MS = 9_000;
/** The limits set small here: every call 2 s, a receive its 1 s long poll on top. */
const REQUEST_MS = 2_000;
const WAIT_SECONDS = 1;
const RECEIVE_LIMIT_MS = WAIT_SECONDS * 1000 + REQUEST_MS;
/** Room for the timer, the event loop and the relay's cycle around each limit. */
const MARGIN_MS = 1_500;
const RECOVERY_BOUND_MS = 7_000;

let server: PrivateElasticmq | undefined;
const cleanup: Array<() => Promise<unknown>> = [];

afterAll(async () => {
  await healAll();
  await runCleanup(cleanup);
  await server?.dispose();
});

describe('network partition to SQS (packets dropped) under load', () => {
  it('both apps notice within their limits; flow resumes after the heal; 0 lost, 0 doubled, nothing dead or charged', async () => {
    // A partition that cannot be played is a failure with the reason, never a skip.
    const unavailable = await partitionUnavailable();
    if (unavailable !== undefined) throw new Error(`cannot cut the network: ${unavailable}`);
    server = await startPrivateElasticmq(60_000);
    const port = Number(new URL(server.endpoint).port);
    const partition = partitionOf(port);
    const admin = new SQSClient(sqsClientSettings(server.endpoint));
    cleanup.push(async () => admin.destroy());
    const { QueueUrl: queueUrl } = await admin.send(
      new CreateQueueCommand({ QueueName: unique('partition') }),
    );
    if (!queueUrl) throw new Error('no queue URL');
    const store = await openLoadStore();
    cleanup.push(() => store.dispose());

    const clock = newClock();
    const consumerLog: LogLine[] = [];
    const relayLog: LogLine[] = [];
    const clientConfig = sqsClientSettings(server.endpoint);
    const timeouts = { connectMs: 1_000, requestMs: REQUEST_MS };
    const sqsConsumer = createSqsConsumer({
      clientConfig,
      timeouts,
      queueUrl,
      waitTimeSeconds: WAIT_SECONDS,
      visibilityTimeoutSeconds: 5,
      inbox: createInbox({ store, consumer: 'partition-test', decode: decodeLoad }),
      handler: loadHandler(store, clock),
      logger: recordingLogger(consumerLog),
    });
    cleanup.push(() => sqsConsumer.stop({ timeoutMs: 5_000 }));
    await sqsConsumer.start();
    const relayLogger = recordingLogger(relayLog);
    const publisher = createSqsPublisher({ clientConfig, timeouts, logger: relayLogger });
    cleanup.push(() => publisher.close());
    const relay = createRelay({
      store,
      publisher: timedPublisher(publisher, clock),
      onPublished: 'keep',
      pollIntervalMs: 200,
      logger: relayLogger,
    });
    cleanup.push(() => relay.stop());
    await relay.start();

    const feeding = feed(store, queueUrl, EVENTS, FEED_MS);
    await sleep(CUT_AFTER_MS);
    const cutAt = Date.now();
    await partition.cut();
    await sleep(CUT_MS);
    await partition.heal();
    const healedAt = Date.now();
    await feeding;
    const outcome = await settle(store, EVENTS, 30_000);
    const recovery = recoveryAfter(clock, healedAt);
    const charged = (await store.knex.raw(
      `select coalesce(max(attempts), 0)::int as n from ${store.names.table('outbox')}`,
    )) as { rows: Array<{ n: number }> };

    const consumerNoticedMs = msUntilLine(consumerLog, cutAt, {
      level: 'warn',
      message: 'sqs consumer: ReceiveMessage',
    });
    const publisherNoticedMs = msUntilLine(relayLog, cutAt, {
      level: 'warn',
      message: 'sqs publisher:',
    });
    const relayNoticedMs = msUntilLine(relayLog, cutAt, {
      level: 'warn',
      message: 'relay: publish failed',
    });
    const receiveWarnings = consumerLog.filter(
      (l) => l.level === 'warn' && l.message.startsWith('sqs consumer: ReceiveMessage'),
    ).length;
    const consumerRecoveredMs = msUntilLine(consumerLog, healedAt, {
      level: 'info',
      message: 'sqs consumer: ReceiveMessage',
    });
    const publisherRecoveredMs = msUntilLine(relayLog, healedAt, {
      level: 'info',
      message: 'sqs publisher:',
    });
    console.log(
      JSON.stringify({
        test: 'sqs-network-partition',
        messages: EVENTS,
        ...outcome,
        maxOutboxAttempts: charged.rows[0]!.n,
        cutMs: healedAt - cutAt,
        limits: { requestMs: REQUEST_MS, receiveMs: RECEIVE_LIMIT_MS },
        consumerNoticedMs,
        publisherNoticedMs,
        relayNoticedMs,
        receiveWarnings,
        consumerRecoveredMs,
        publisherRecoveredMs,
        ...recovery,
      }),
    );

    expect(outcome).toMatchObject({ lost: 0, doubled: 0, dead: 0, deadLetters: 0 });
    // An outage is never charged to an event.
    expect(charged.rows[0]!.n).toBe(0);
    expect(consumerNoticedMs).not.toBeNull();
    expect(consumerNoticedMs!).toBeLessThanOrEqual(RECEIVE_LIMIT_MS + MARGIN_MS);
    expect(publisherNoticedMs).not.toBeNull();
    expect(publisherNoticedMs!).toBeLessThanOrEqual(REQUEST_MS + MARGIN_MS);
    expect(relayNoticedMs).not.toBeNull();
    expect(relayNoticedMs!).toBeLessThanOrEqual(REQUEST_MS + MARGIN_MS);
    // Once per outage, not once per poll (the cut spans several receive limits).
    expect(receiveWarnings).toBe(1);
    expect(consumerRecoveredMs).not.toBeNull();
    expect(recovery.firstPublishMs).not.toBeNull();
    expect(recovery.firstPublishMs!).toBeLessThan(RECOVERY_BOUND_MS);
    expect(recovery.firstHandledMs).not.toBeNull();
    expect(recovery.firstHandledMs!).toBeLessThan(RECOVERY_BOUND_MS);
  });
});
