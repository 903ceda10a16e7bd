import { rowsOf, type Store } from '../src';
import type { Handler } from '../src/inbox/types';
import {
  CRASH_POINTS,
  IdleTimeoutError,
  createTestHarness,
  type CrashPoint,
  type TestHarness,
  type TestHarnessOptions,
} from '../src/testing';
import { openTestStore } from './db';

/**
 * The harness against a real inbox on a real store: PGlite (one per file) for most tests,
 * PostgreSQL where two transactions must truly run at once.
 */

let lite: Store & { dispose(): Promise<void> };
let tableNo = 0;
const open: TestHarness[] = [];

beforeAll(async () => {
  lite = await openTestStore('pglite');
});

afterEach(async () => {
  await Promise.all(open.splice(0).map((h) => h.close()));
});

afterAll(async () => {
  await lite.dispose();
});

/** A harness whose handler charges one row per message into a table of its own. */
async function chargingHarness(
  store: Store,
  extra: Partial<TestHarnessOptions> = {},
): Promise<TestHarness> {
  tableNo += 1;
  const table = store.names.table(`charges_${tableNo}`);
  const handler: Handler = async ({ trx, messageId }) => {
    await trx.raw(`insert into ${table} (message_id) values (?)`, [messageId]);
  };
  const harness = await createTestHarness({
    store,
    consumer: `consumer-${tableNo}`,
    handler,
    setup: async (s) => {
      await s.knex.raw(`create table ${table} (message_id text not null)`);
    },
    countEffects: async (s) =>
      Number(rowsOf<{ n: string }>(await s.knex.raw(`select count(*) as n from ${table}`))[0]?.n),
    ...extra,
  });
  open.push(harness);
  return harness;
}

describe('test harness on PGlite', () => {
  it('processes each message once when nothing goes wrong', async () => {
    const h = await chargingHarness(lite);
    h.publish(Array.from({ length: 5 }, (_, i) => ({ id: `m-${i}`, body: { n: i } })));
    const counts = await h.runUntilIdle();
    expect(counts).toMatchObject({
      published: 5,
      deliveries: 5,
      processed: 5,
      duplicates: 0,
      crashed: 0,
      deadLetters: 0,
      handlerRuns: 5,
      effects: 5,
    });
    expect(h.outcomes.map((o) => o.outcome?.status)).toEqual(Array(5).fill('processed'));
  });

  it('a crash at handler-done rolls back, is redelivered, and still leaves one effect', async () => {
    const h = await chargingHarness(lite);
    h.faults.crash('handler-done', 'm-1');
    h.publish({ id: 'm-1', body: 'x' });
    const counts = await h.runUntilIdle();
    expect(counts).toMatchObject({ deliveries: 2, crashed: 1, handlerRuns: 2, effects: 1 });
    expect(h.outcomes.map((o) => [o.result, o.crashPoint ?? null])).toEqual([
      ['crashed', 'handler-done'],
      ['processed', null],
    ]);
  });

  /** Per crash point: how often the handler runs, and whether the redelivery is a duplicate. */
  const expected: Record<CrashPoint, { handlerRuns: number; duplicates: number }> = {
    received: { handlerRuns: 1, duplicates: 0 },
    'attempt-counted': { handlerRuns: 1, duplicates: 0 },
    'handler-done': { handlerRuns: 2, duplicates: 0 },
    committed: { handlerRuns: 1, duplicates: 1 },
    'after-commit-before-ack': { handlerRuns: 1, duplicates: 1 },
  };

  it.each(CRASH_POINTS.map((p) => [p]))(
    'a crash at %s is injected, redelivered, and ends in exactly one effect',
    async (point) => {
      const h = await chargingHarness(lite);
      h.faults.crash(point, 'c-1');
      h.publish({ id: 'c-1', body: 'x' });
      const counts = await h.runUntilIdle();
      expect(h.broker.injected().crashes[point]).toBe(1);
      expect(counts).toMatchObject({
        deliveries: 2,
        crashed: 1,
        effects: 1,
        deadLetters: 0,
        ...expected[point],
      });
      expect(h.outcomes[0]).toMatchObject({ result: 'crashed', crashPoint: point, acked: false });
      expect(h.outcomes[1]?.receiveCount).toBe(2);
    },
  );

  it('suppresses injected duplicates', async () => {
    const h = await chargingHarness(lite);
    h.faults.duplicate('d-1', 3);
    h.publish([
      { id: 'd-1', body: 'x' },
      { id: 'd-2', body: 'y' },
    ]);
    const counts = await h.runUntilIdle();
    expect(counts).toMatchObject({ deliveries: 5, duplicates: 3, handlerRuns: 2, effects: 2 });
  });

  it('dead-letters a poison message after maxAttempts and keeps the others', async () => {
    tableNo += 1;
    const h = await createTestHarness({
      store: lite,
      consumer: `poison-${tableNo}`,
      inbox: { maxAttempts: 3 },
      handler: async ({ messageId }) => {
        if (messageId === 'poison') throw new Error('always fails');
      },
    });
    open.push(h);
    h.publish([
      { id: 'poison', body: 'x' },
      { id: 'fine', body: 'y' },
    ]);
    const counts = await h.runUntilIdle();
    expect(counts).toMatchObject({ failed: 2, deadLetters: 1, processed: 1, effects: 1 });
    expect(h.deadLetters().map((d) => [d.message.id, d.reason])).toEqual([
      ['poison', 'MAX_ATTEMPTS'],
    ]);
    expect(h.deadLetters()[0]?.deadLetterId).toEqual(expect.any(String));
  });

  it('dead-letters a message without an id, without running the handler', async () => {
    const h = await chargingHarness(lite);
    h.publish({ id: undefined, body: 'x' });
    const counts = await h.runUntilIdle();
    expect(counts).toMatchObject({ deadLetters: 1, handlerRuns: 0, effects: 0 });
    expect(h.deadLetters()[0]?.reason).toBe('MISSING_MESSAGE_ID');
  });

  it('runs a user onStep hook before the broker crash hook', async () => {
    const steps: string[] = [];
    const h = await chargingHarness(lite, {
      inbox: {
        onStep: (step) => {
          steps.push(step);
        },
      },
    });
    h.faults.crash('received', 's-1');
    h.publish({ id: 's-1', body: 'x' });
    await h.runUntilIdle();
    expect(steps).toEqual(['received', 'received', 'attempt-counted', 'handler-done', 'committed']);
  });

  it('runUntilIdle rejects with IdleTimeoutError while a handler hangs', async () => {
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    tableNo += 1;
    const h = await createTestHarness({
      store: lite,
      consumer: `hang-${tableNo}`,
      handler: () => gate,
    });
    open.push(h);
    h.publish({ id: 'h-1', body: 'x' });
    await expect(h.runUntilIdle({ timeoutMs: 50 })).rejects.toBeInstanceOf(IdleTimeoutError);
    release();
    await expect(h.runUntilIdle()).resolves.toMatchObject({ processed: 1 });
  });

  it('by default counts as effects only the handler runs whose transaction committed', async () => {
    tableNo += 1;
    const h = await createTestHarness({
      store: lite,
      consumer: `default-effects-${tableNo}`,
      handler: async () => undefined,
    });
    open.push(h);
    h.faults.crash('handler-done', 'e-1', 2);
    h.publish({ id: 'e-1', body: 'x' });
    const counts = await h.runUntilIdle();
    expect(counts).toMatchObject({ handlerRuns: 3, crashed: 2, effects: 1 });
  });

  it('rejects a missing handler as a configuration error', async () => {
    await expect(
      createTestHarness({ store: lite } as unknown as TestHarnessOptions),
    ).rejects.toMatchObject({ code: 'INVALID_CONFIG' });
  });
});

describe('test harness with its default store', () => {
  it('opens, migrates and closes an embedded PGlite of its own', async () => {
    const h = await createTestHarness({ handler: async () => 'ok' });
    try {
      expect(h.store.dialect).toBe('pglite');
      h.faults.crash('committed', 'only');
      h.publish({ id: 'only', body: { a: 1 } });
      const counts = await h.runUntilIdle();
      // The delivery that committed crashed before its ack, so the acknowledged one is the duplicate.
      expect(counts).toMatchObject({ processed: 0, duplicates: 1, handlerRuns: 1, effects: 1 });
    } finally {
      await h.close();
      await h.close();
    }
  });
});

describe('test harness on PostgreSQL', () => {
  let pg: Store & { dispose(): Promise<void> };
  beforeAll(async () => {
    pg = await openTestStore('postgres');
  });
  afterAll(async () => {
    await pg.dispose();
  });

  it('two concurrent deliveries of one message: one effect, one duplicate', async () => {
    const h = await chargingHarness(pg);
    for (let i = 0; i < 5; i += 1) h.faults.concurrent(`cc-${i}`);
    h.publish(Array.from({ length: 5 }, (_, i) => ({ id: `cc-${i}`, body: 'x' })));
    const counts = await h.runUntilIdle();
    expect(h.broker.injected().concurrent).toBe(5);
    expect(counts).toMatchObject({ deliveries: 10, processed: 5, duplicates: 5, effects: 5 });
    expect(h.outcomes.filter((o) => o.kind === 'concurrent')).toHaveLength(5);
  });

  it('random faults from a seed: effects still equal unique messages', async () => {
    const h = await chargingHarness(pg, {
      concurrency: 8,
      broker: { seed: 11, faults: { duplicateRate: 0.3, concurrentRate: 0.2, crashRate: 0.2 } },
    });
    h.publish(Array.from({ length: 60 }, (_, i) => ({ id: `r-${i}`, body: { i } })));
    const counts = await h.runUntilIdle();
    const injected = h.broker.injected();
    expect(injected.duplicates + injected.concurrent).toBeGreaterThan(0);
    expect(Object.values(injected.crashes).reduce((a, b) => a + b, 0)).toBeGreaterThan(0);
    expect(counts.effects).toBe(60);
    expect(new Set(h.outcomes.filter((o) => o.acked).map((o) => o.messageId)).size).toBe(60);
    expect(counts.deadLetters).toBe(0);
  });
});
