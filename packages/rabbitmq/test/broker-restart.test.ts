/**
 * RabbitMQ's application stopped (`rabbitmqctl stop_app`) and started again under load, the
 * Erlang node left running, on a private node (the other test files keep the shared server).
 * A relay publishes events added at a steady rate; a consumer handles them through the inbox.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { createInbox, type Logger } from '@justonce/core';
import { createRabbitConsumer, createRabbitPublisher } from '../src';
import { checkRabbitmq } from '../../../services/checks';
import { startPrivateRabbitmq } from '../../../services/private';
import type { RabbitmqNode } from '../../../services/rabbitmq';
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

const EVENTS = 300;
const FEED_MS = 10_000;
const STOP_AFTER_MS = 3000;
const DOWN_FOR_MS = 4000;
const RECOVERY_BOUND_MS = 30_000;

let node: RabbitmqNode;
const cleanup: Array<() => Promise<unknown>> = [];

beforeAll(async () => {
  node = await startPrivateRabbitmq(60_000);
  cleanup.push(() => node.dispose());
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

/** Stops the broker application mid-load, starts it again, returns when AMQP answers again. */
async function stopAndStartApp(): Promise<{ stoppedAt: number; answeredAt: number }> {
  await sleep(STOP_AFTER_MS);
  const stoppedAt = Date.now();
  await node.stopApp();
  await sleep(DOWN_FOR_MS);
  let answeredAt: number | undefined;
  let starting = true;
  const watching = (async () => {
    while (starting && answeredAt === undefined) {
      if ((await checkRabbitmq(node.url)).ok) answeredAt = Date.now();
      else await sleep(100);
    }
  })();
  try {
    await node.startApp();
  } finally {
    starting = false;
    await watching;
  }
  return { stoppedAt, answeredAt: answeredAt ?? Date.now() };
}

describe('RabbitMQ application stopped and started under load', () => {
  it('zero lost, zero doubled, nothing dead, recovery within the bound', async () => {
    const queue = uniqueName('restart');
    const store = await openLoadStore();
    cleanup.push(() => store.dispose());
    const clock = newClock();
    const log: string[] = [];
    const logger = collectingLogger(log);
    const consumer = createRabbitConsumer({
      url: node.url,
      queue,
      inbox: createInbox({ store, consumer: 'restart-test', decode: decodeLoad }),
      handler: loadHandler(store, clock),
      logger,
    });
    cleanup.push(() => consumer.stop());
    await consumer.start();
    const publisher = createRabbitPublisher({ url: node.url, logger });
    cleanup.push(() => publisher.close());
    const relay = loadRelay(store, timedPublisher(publisher, clock));
    cleanup.push(() => relay.stop());
    await relay.start();

    const feeding = feed(store, queue, EVENTS, FEED_MS);
    const { stoppedAt, answeredAt } = await stopAndStartApp();
    await feeding;
    const outcome = await settle(store, EVENTS, 60_000);
    const recovery = recoveryAfter(clock, answeredAt);
    console.log(
      JSON.stringify({
        test: 'rabbitmq-stop-app-start-app',
        ...outcome,
        outageMs: answeredAt - stoppedAt,
        ...recovery,
        transportLog: log.slice(0, 5),
      }),
    );
    expect(outcome).toMatchObject({ lost: 0, doubled: 0, dead: 0, deadLetters: 0 });
    expect(recovery.firstPublishMs).not.toBeNull();
    expect(recovery.firstPublishMs!).toBeLessThan(RECOVERY_BOUND_MS);
    expect(recovery.firstHandledMs).not.toBeNull();
    expect(recovery.firstHandledMs!).toBeLessThan(RECOVERY_BOUND_MS);
  });
});
