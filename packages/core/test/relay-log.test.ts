import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { MeterProvider, MetricReader, type MetricData } from '@opentelemetry/sdk-metrics';
import {
  createMemoryPublisher,
  createOutbox,
  createRelay,
  rowsOf,
  type MemoryPublisher,
  type Relay,
} from '../src';
import { waitFor } from '../../../test-support/wait-for';
import { confirmedLsn, openLogStore, type LogTestStore } from './fixtures/log-relay-support';

let store: LogTestStore;
const relays: Relay[] = [];

beforeAll(async () => {
  store = await openLogStore();
});
afterAll(async () => {
  await Promise.all(relays.map((relay) => relay.stop({ timeoutMs: 5_000 })));
  await store.dispose();
});

/** A log relay on the test store; stopped after the file. */
function logRelay(publisher: MemoryPublisher, slot: string, extra: object = {}): Relay {
  const relay = createRelay({
    store,
    publisher,
    mode: 'log',
    log: { slot: `${store.schema}_${slot}`, statusIntervalMs: 500, standbyRetryMs: 100 },
    backoff: { baseMs: 10, capMs: 50 },
    ...extra,
  });
  relays.push(relay);
  return relay;
}

const outboxTable = (): string => store.names.table('outbox');

describe("mode 'log' on a server with wal_level = logical", () => {
  it('publishes what committed, in commit order per key, and nothing that rolled back', async () => {
    const publisher = createMemoryPublisher();
    const relay = logRelay(publisher, 'order');
    // The slot exists from here on: what commits after it is in it.
    await relay.runOnce();
    const outbox = createOutbox({ store });
    // Two transactions on one key: the first inserted commits last.
    const first = await store.knex.transaction();
    await outbox.add(first, {
      destination: 'orders',
      key: 'k',
      payload: { step: 'inserted first' },
    });
    await store.knex.transaction((second) =>
      outbox.add(second, { destination: 'orders', key: 'k', payload: { step: 'committed first' } }),
    );
    await first.commit();
    await store.knex
      .transaction(async (trx) => {
        await outbox.add(trx, {
          destination: 'orders',
          key: 'k',
          payload: { step: 'rolled back' },
        });
        throw new Error('roll back');
      })
      .catch(() => undefined);
    await store.knex.transaction((trx) =>
      outbox.add(trx, [
        { destination: 'orders', key: 'k', payload: { step: 'last' } },
        { destination: 'audit', payload: { step: 'keyless' } },
      ]),
    );
    const result = await relay.runOnce();
    expect(result).toMatchObject({ published: 4, failed: 0, dead: 0 });
    const steps = publisher
      .byKey('k')
      .map((m) => (JSON.parse(Buffer.from(m.payload).toString()) as { step: string }).step);
    expect(steps).toEqual(['committed first', 'inserted first', 'last']);
    expect(publisher.byKey(null).map((m) => m.destination)).toEqual(['audit']);
    // Confirmed: a second pass finds nothing, and the rows were never updated.
    expect(await relay.runOnce()).toMatchObject({ published: 0 });
    const [row] = rowsOf<{ pending: number }>(
      await store.knex.raw(
        `select count(*) filter (where status = 'pending')::int as pending from ${outboxTable()}`,
      ),
    );
    expect(row!.pending).toBe(4);
  });

  it('carries any payload bytes, headers and key exactly as the polling relay would', async () => {
    const publisher = createMemoryPublisher();
    const relay = logRelay(publisher, 'bytes');
    await relay.runOnce();
    const outbox = createOutbox({ store });
    const text = fc
      .string({ unit: 'grapheme', maxLength: 20 })
      .filter((s) => !s.includes('\u0000'));
    await fc.assert(
      fc.asyncProperty(
        fc.uint8Array({ maxLength: 3_000 }),
        fc.option(
          text.filter((s) => s.length > 0),
          { nil: null },
        ),
        fc.dictionary(fc.stringMatching(/^x-[a-z]{1,8}$/), text, { maxKeys: 4 }),
        async (bytes, key, headers) => {
          publisher.clear();
          const payload = Buffer.from(bytes);
          await store.knex.transaction((trx) =>
            outbox.add(trx, { destination: 'bytes', key, headers, payload }),
          );
          await relay.runOnce();
          expect(publisher.published).toHaveLength(1);
          const [message] = publisher.published;
          expect(Buffer.from(message!.payload).equals(payload)).toBe(true);
          expect(message!.key).toBe(key);
          for (const [name, value] of Object.entries(headers)) {
            expect(message!.headers[name]).toBe(value);
          }
          expect(message!.messageId).toEqual(expect.any(String));
        },
      ),
      { numRuns: 25 },
    );
  });

  it('publishes while started, and reports its slot', async () => {
    const publisher = createMemoryPublisher();
    const relay = logRelay(publisher, 'started');
    await relay.start();
    const outbox = createOutbox({ store });
    for (let i = 0; i < 5; i += 1) {
      await store.knex.transaction((trx) =>
        outbox.add(
          trx,
          Array.from({ length: 50 }, (_, n) => ({
            destination: 'live',
            key: `k${n % 7}`,
            payload: { i, n },
          })),
        ),
      );
    }
    await publisher.waitForCount(250);
    await waitFor(
      'the relay to be caught up',
      async () => (await relay.stats()).log?.lagSeconds === 0,
    );
    const stats = await relay.stats();
    expect(stats.log).toMatchObject({ slot: `${store.schema}_started`, active: true });
    // The relay confirms the server's position on idle keepalives, so the slot may move
    // between two reads: wait for a pair of reads that agree.
    await waitFor(
      'the relay and the slot to report one confirmed position',
      async () =>
        (await relay.stats()).log!.confirmedLsn ===
        (await confirmedLsn(store.knex, `${store.schema}_started`)),
    );
    expect(stats.pending).toBe(0);
    await relay.stop();
    expect(relay.running).toBe(false);
  });

  it('retries a failing key in order, marks a refused event dead, and requeues it through the slot', async () => {
    const publisher = createMemoryPublisher();
    const relay = logRelay(publisher, 'dead', { maxAttempts: 1_000 });
    await relay.runOnce();
    const outbox = createOutbox({ store });
    const heal = publisher.failKey('flaky');
    publisher.failWhen((m) =>
      JSON.parse(Buffer.from(m.payload).toString()).refused === true
        ? { error: new Error('too large for good'), retriable: false }
        : undefined,
    );
    await store.knex.transaction((trx) =>
      outbox.add(trx, [
        { destination: 'd', key: 'flaky', payload: { n: 1 } },
        { destination: 'd', key: 'flaky', payload: { n: 2 } },
        { destination: 'd', key: 'bad', payload: { n: 1, refused: true } },
        { destination: 'd', key: 'bad', payload: { n: 2 } },
      ]),
    );
    const run = relay.runOnce();
    await waitFor(
      'a failed attempt of the flaky key',
      async () => (await relay.stats()).failed > 0,
    );
    heal();
    const result = await run;
    expect(result).toMatchObject({ published: 3, dead: 1 });
    const seq = (key: string) =>
      publisher
        .byKey(key)
        .map((m) => (JSON.parse(Buffer.from(m.payload).toString()) as { n: number }).n);
    expect(seq('flaky')).toEqual([1, 2]);
    expect(seq('bad')).toEqual([2]);
    const [dead] = await relay.listDead();
    expect(dead).toMatchObject({
      key: 'bad',
      attempts: 1,
      lastError: expect.stringContaining('too large'),
    });
    publisher.heal();
    expect(await relay.requeue(dead!.id)).toEqual(expect.any(String));
    await relay.runOnce();
    expect(publisher.byKey('bad').map((m) => m.messageId)).toEqual([
      expect.any(String),
      dead!.messageId,
    ]);
  });

  it('cleans up by age, and an event whose row is gone still goes out: the slot reads the WAL', async () => {
    const publisher = createMemoryPublisher();
    const relay = logRelay(publisher, 'cleanup');
    await relay.runOnce();
    const outbox = createOutbox({ store });
    await store.knex.transaction((trx) =>
      outbox.add(trx, [
        { destination: 'c', key: 'a', payload: 1 },
        { destination: 'c', key: 'a', payload: 2 },
      ]),
    );
    const count = async (): Promise<number> =>
      Number(
        rowsOf<{ n: number }>(
          await store.knex.raw(
            `select count(*)::int as n from ${outboxTable()} where destination = 'c'`,
          ),
        )[0]!.n,
      );
    // A day's window keeps them.
    await relay.cleanup();
    expect(await count()).toBe(2);
    // A window of 0 deletes every event but the dead, before the relay has read them.
    await relay.cleanup({ olderThanMs: 0, batchSize: 1 });
    expect(await count()).toBe(0);
    const before = (await relay.listDead()).length;
    expect(before).toBeGreaterThanOrEqual(0);
    expect(await relay.runOnce()).toMatchObject({ published: 2 });
    expect(publisher.byKey('a')).toHaveLength(2);
  });

  it('reports its lag in bytes and seconds as OpenTelemetry gauges', async () => {
    const reader = new TestReader();
    const provider = new MeterProvider({ readers: [reader] });
    try {
      const publisher = createMemoryPublisher();
      const slot = `${store.schema}_gauges`;
      const relay = logRelay(publisher, 'gauges', { meter: provider.getMeter('test') });
      await relay.runOnce();
      // The broker refuses every call: the relay reads, cannot publish, and falls behind.
      publisher.rejectNextCalls(1_000_000);
      await relay.start();
      await store.knex.transaction((trx) =>
        createOutbox({ store }).add(trx, {
          destination: 'g',
          key: 'g',
          payload: randomBytes(20_000),
        }),
      );
      await waitFor('a failed call', async () => (await relay.stats()).failed > 0);
      const behind = await collect(reader);
      expect(behind[`justonce.relay.slot.lag{slot=${slot}}`]).toBeGreaterThan(10_000);
      expect(behind[`justonce.relay.slot.lag_seconds{slot=${slot}}`]).toBeGreaterThanOrEqual(0);
      expect((await relay.stats()).pending).toBe(1);
      publisher.heal();
      await publisher.waitForCount(1);
      await waitFor(
        'the slot to be confirmed',
        async () => (await relay.stats()).log!.lagBytes < 10_000,
      );
      const caughtUp = await collect(reader);
      expect(caughtUp[`justonce.relay.slot.lag_seconds{slot=${slot}}`]).toBe(0);
      expect(caughtUp[`justonce.relay.slot.lag{slot=${slot}}`]).toBeLessThan(10_000);
      await relay.stop();
    } finally {
      await provider.shutdown();
    }
  });

  it('stops with drain after publishing and confirming everything committed before', async () => {
    const publisher = createMemoryPublisher({ delayMs: 5 });
    const relay = logRelay(publisher, 'drain', { batchSize: 25 });
    await relay.runOnce();
    const outbox = createOutbox({ store });
    // A backlog beyond what the relay buffers (eight batches): it stops reading the socket
    // until the broker has caught up, and reads on.
    for (let t = 0; t < 5; t += 1) {
      await store.knex.transaction((trx) =>
        outbox.add(
          trx,
          Array.from({ length: 100 }, (_, n) => ({
            destination: 'drain',
            key: `k${n % 5}`,
            payload: { seq: t * 100 + n },
          })),
        ),
      );
    }
    await relay.start();
    await relay.stop({ drain: true });
    expect(publisher.published).toHaveLength(500);
    for (let k = 0; k < 5; k += 1) {
      const seqs = publisher
        .byKey(`k${k}`)
        .map((m) => (JSON.parse(Buffer.from(m.payload).toString()) as { seq: number }).seq);
      expect(seqs).toEqual([...seqs].sort((x, y) => x - y));
    }
    // Confirmed before it stopped: nothing comes again.
    expect(await relay.runOnce()).toMatchObject({ published: 0 });
  });

  it('lets go of the slot when stop times out on a publisher that hangs; the next reader repeats that batch', async () => {
    const hanging = createMemoryPublisher();
    const never = new Promise<never>(() => undefined);
    const calls: string[][] = [];
    const relay = createRelay({
      store,
      publisher: {
        publish: (messages) => {
          calls.push(messages.map((m) => m.messageId));
          return never;
        },
        close: () => hanging.close(),
      },
      mode: 'log',
      log: { slot: `${store.schema}_hang`, standbyRetryMs: 100 },
    });
    relays.push(relay);
    await relay.runOnce();
    await relay.start();
    await store.knex.transaction((trx) =>
      createOutbox({ store }).add(trx, { destination: 'hang', key: 'h', payload: 1 }),
    );
    await waitFor('the hanging call', () => calls.length > 0);
    await relay.stop({ timeoutMs: 100 });
    expect(relay.running).toBe(false);
    const publisher = createMemoryPublisher();
    const next = logRelay(publisher, 'hang');
    await waitFor('the next reader to publish the batch', async () => {
      await next.runOnce();
      return publisher.published.length > 0;
    });
    expect(publisher.published.map((m) => m.messageId)).toEqual(calls[0]);
  });
});

/** A pull reader: the test decides when the SDK collects. */
class TestReader extends MetricReader {
  protected onForceFlush(): Promise<void> {
    return Promise.resolve();
  }
  protected onShutdown(): Promise<void> {
    return Promise.resolve();
  }
}

/** The collected points as `name{attr=value,…} → value`. */
async function collect(reader: TestReader): Promise<Record<string, number>> {
  const { resourceMetrics, errors } = await reader.collect();
  expect(errors).toEqual([]);
  const points: Record<string, number> = {};
  const metrics: MetricData[] = resourceMetrics.scopeMetrics.flatMap((s) => s.metrics);
  for (const metric of metrics) {
    for (const point of metric.dataPoints) {
      const attributes = Object.entries(point.attributes)
        .map(([k, v]) => `${k}=${String(v)}`)
        .join(',');
      points[`${metric.descriptor.name}{${attributes}}`] = point.value as number;
    }
  }
  return points;
}
