/**
 * A consumer's load shedding reaches `admin.status()`: a memory-broker consumer with a real
 * inbox and `resilience` set, whose handler fails until its breaker opens, reports the
 * breaker and the budget to `consumer_resilience` (PostgreSQL, MySQL); a report grown old
 * is shown as stale, and after a day not at all; a store that cannot take the report does
 * not fail handling.
 */
import { createAdmin } from '../src/admin';
import type { ConsumerResilience } from '../src/admin/types';
import { createInbox } from '../src/inbox/create-inbox';
import type { Logger } from '../src/observability/logger';
import { createMemoryBroker, type MemoryBroker } from '../src/testing';
import { openTestStore } from './db';

type TestStore = Awaited<ReturnType<typeof openTestStore>>;

let broker: MemoryBroker;
beforeEach(() => {
  broker = createMemoryBroker();
});
afterEach(async () => {
  await broker.close();
});

/** A logger that keeps the warnings. */
function quietLogger(): Logger & { warnings: string[] } {
  const warnings: string[] = [];
  const none = (): void => undefined;
  return { debug: none, info: none, error: none, warn: (m) => warnings.push(m), warnings };
}

/** Starts a consumer of `store` whose handler always fails; its breaker opens after 2. */
async function failingConsumer(store: TestStore, consumer: string, logger: Logger) {
  const inbox = createInbox({
    store,
    consumer,
    maxAttempts: 5,
    backoff: { baseMs: 10, capMs: 20 },
    logger,
  });
  const running = broker.consume(consumer, {
    inbox,
    handler: async () => {
      throw new Error('the downstream is down');
    },
    resilience: { breaker: { trip: { consecutiveFailures: 2 }, openMs: 60_000 } },
  });
  await running.start();
  broker.send(
    consumer,
    [1, 2, 3].map((n) => ({ id: `m-${n}`, body: String(n) })),
  );
  return { inbox, running };
}

/** Polls `status()` until `consumer` reported, within 10 s. */
async function reported(store: TestStore, consumer: string): Promise<ConsumerResilience> {
  const admin = createAdmin(store);
  const deadline = Date.now() + 10_000;
  for (;;) {
    const found = (await admin.status()).resilience.find((c) => c.consumer === consumer);
    if (found?.breakers[0]?.state === 'open') return found;
    if (Date.now() > deadline)
      throw new Error(`no open breaker reported: ${JSON.stringify(found)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

// PGlite runs PostgreSQL's statements: PostgreSQL and MySQL cover both spellings.
describe.each(['postgres', 'mysql'] as const)('load shedding in status (%s)', (kind) => {
  let store: TestStore;
  beforeAll(async () => {
    store = await openTestStore(kind);
  });
  afterAll(async () => {
    await store.dispose();
  });

  const consumer = `shed-${kind}-${process.pid}`;

  it("an open breaker and the budget's figures reach admin.status()", async () => {
    const logger = quietLogger();
    const { running } = await failingConsumer(store, consumer, logger);
    const state = await reported(store, consumer);
    expect(state).toEqual({
      consumer,
      reportedAt: expect.any(Date),
      stale: false,
      budgetRemaining: expect.any(Number),
      window: {
        windowMs: 10_000,
        firstDeliveries: expect.any(Number),
        retriesPaid: expect.any(Number),
        retriesShed: 0,
        breakerSheds: expect.any(Number),
      },
      breakers: [{ key: '*', state: 'open', since: expect.any(Date) }],
    });
    expect(state.window.firstDeliveries).toBeGreaterThanOrEqual(1);
    expect(state.window.retriesPaid).toBeGreaterThanOrEqual(1);
    expect(Math.abs(state.breakers[0]!.since.getTime() - Date.now())).toBeLessThan(15_000);
    expect(logger.warnings.filter((w) => w.startsWith('resilience'))).toEqual([]);
    await running.stop();
  });

  it('a consumer that stopped reporting is shown as stale, with its last state', async () => {
    // The report of the test above, aged past the stale limit.
    const table = store.names.table('consumer_resilience');
    const minuteAgo = new Date(Date.now() - 60_000);
    await store.knex.raw(`update ${table} set reported_at = ? where consumer = ?`, [
      minuteAgo,
      consumer,
    ]);
    const status = await createAdmin(store).status();
    const state = status.resilience.find((c) => c.consumer === consumer);
    expect(state?.stale).toBe(true);
    expect(state?.breakers.map((b) => b.state)).toEqual(['open']);

    // Silent for a day: no longer shown.
    await store.knex.raw(`update ${table} set reported_at = ? where consumer = ?`, [
      new Date(Date.now() - 25 * 3_600_000),
      consumer,
    ]);
    const later = await createAdmin(store).status();
    expect(later.resilience.find((c) => c.consumer === consumer)).toBeUndefined();
  });
});

describe('a store that cannot take the report', () => {
  it('logs the failed write; messages are still handled', async () => {
    const store = await openTestStore('postgres');
    try {
      await store.knex.raw(`drop table ${store.names.table('consumer_resilience')}`);
      const logger = quietLogger();
      const consumer = `unwritable-${process.pid}`;
      const inbox = createInbox({ store, consumer, logger, maxAttempts: 10 });
      const handled: string[] = [];
      const running = broker.consume(consumer, {
        inbox,
        handler: async (ctx) => {
          handled.push(ctx.messageId);
        },
        resilience: {},
      });
      await running.start();
      broker.send(
        consumer,
        [1, 2, 3].map((n) => ({ id: `m-${n}`, body: String(n) })),
      );
      await broker.whenIdle({ timeoutMs: 10_000 });
      expect(handled.sort()).toEqual(['m-1', 'm-2', 'm-3']);
      await inbox.flushActivity();
      const deadline = Date.now() + 5_000;
      while (logger.warnings.length === 0 && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      expect(logger.warnings).toContain(
        'resilience: could not write the consumer state; retrying later',
      );
      await running.stop();
    } finally {
      await store.dispose();
    }
  });
});
