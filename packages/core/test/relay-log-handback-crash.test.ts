import { createOutbox, createRelay, rowsOf } from '../src';
import { waitFor } from '../../../test-support/wait-for';
import { logicalDatabaseUrl, openLogStore, type LogTestStore } from './fixtures/log-relay-support';
import { createSinkTable, sinkPublisher } from './fixtures/relay-sink';
import {
  analyzeSink,
  spawnRelayWorker,
  stopWorker,
  type WorkerProcess,
} from './fixtures/relay-spawn';

const KEYS = 20;
/** Each key's events read by the log relay before the hand-back, then added during it. */
const BEFORE = 10;
const DURING = 10;
const TOTAL = KEYS * (BEFORE + DURING);

describe('a log relay killed with SIGKILL while it hands the outbox back to polling', () => {
  let store: LogTestStore;
  const workers: WorkerProcess[] = [];
  beforeAll(async () => {
    store = await openLogStore();
  });
  afterAll(async () => {
    for (const w of workers) if (w.child.exitCode === null) w.child.kill('SIGKILL');
    await Promise.all(workers.map((w) => w.exited));
    await store.dispose();
  });

  /** Transactions of one event per key, each key's `seq` from `from` in order. */
  async function produce(from: number, count: number): Promise<void> {
    const outbox = createOutbox({ store });
    for (let seq = from; seq < from + count; seq += 1) {
      await store.knex.transaction((trx) =>
        outbox.add(
          trx,
          Array.from({ length: KEYS }, (_, k) => ({
            destination: 'handback',
            key: `key-${k}`,
            payload: { seq },
          })),
        ),
      );
    }
  }

  const handBack = async (slot: string): Promise<{ done: boolean } | undefined> =>
    rowsOf<{ done: boolean }>(
      await store.knex
        .raw(`select done from ${store.names.table('relay_handback')} where slot = ?`, [slot])
        .catch(() => ({ rows: [] })),
    )[0];

  it('loses nothing, keeps each key in order, and repeats only what it had at the broker', async () => {
    const slot = `${store.schema}_handback`;
    const sink = store.names.table('sink');
    await createSinkTable(store.knex, sink);
    const base = {
      DATABASE_URL: logicalDatabaseUrl(),
      RELAY_SCHEMA: store.schema,
      RELAY_SINK: sink,
      RELAY_SLOT: slot,
      RELAY_BATCH: '40',
      RELAY_PAUSE_AFTER_MS: '150',
    };
    const victim = spawnRelayWorker('victim', base, 'log-relay-worker.ts');
    workers.push(victim);
    await victim.waitForLine(/^active$/);
    await produce(0, BEFORE);
    await victim.waitForLine(/^published 1 /);
    // The hand-back begins with most of the backlog still to publish from the slot.
    victim.child.kill('SIGUSR2');
    await waitFor('the boundary to be recorded', async () => (await handBack(slot)) !== undefined);
    const writing = produce(BEFORE, DURING);
    await victim.waitForLine(/^published 3 /);
    victim.child.kill('SIGKILL');
    expect((await victim.exited).signal).toBe('SIGKILL');
    await writing;
    expect((await handBack(slot))?.done).toBe(false);
    const [{ n: atKill }] = rowsOf<{ n: number }>(
      await store.knex.raw(`select count(*)::int as n from ${sink}`),
    ) as [{ n: number }];

    // The next reader of the slot finishes the hand-back it finds begun.
    const next = spawnRelayWorker(
      'next',
      { ...base, RELAY_PAUSE_AFTER_MS: '0' },
      'log-relay-worker.ts',
    );
    workers.push(next);
    await waitFor('the hand-back to be done', async () => (await handBack(slot))?.done === true, {
      timeoutMs: 30_000,
    });
    await stopWorker(next);

    const polling = createRelay({
      store,
      publisher: sinkPublisher(store.knex, sink, 'polling'),
      pollIntervalMs: 20,
      batchSize: 40,
    });
    await polling.start();
    await polling.stop({ drain: true, timeoutMs: 30_000 });

    const report = await analyzeSink(store.knex, sink);
    expect(report.distinct).toBe(TOTAL);
    expect(report.orderViolations).toBe(0);
    // Only what the victim had at the broker, unconfirmed, comes again, under the same ids.
    for (const id of report.duplicatedIds) expect(report.firstWorker.get(id)).toBe('victim');
    expect(report.duplicates).toBeLessThanOrEqual(atKill);
    expect(report.byWorker.next ?? 0).toBeGreaterThan(0);
    expect(report.byWorker.polling ?? 0).toBeGreaterThan(0);
  }, 60_000);
});
