import { createOutbox, rowsOf } from '../src';
import { waitFor } from '../../../test-support/wait-for';
import {
  logicalDatabaseUrl,
  openLogStore,
  slotActive,
  type LogTestStore,
} from './fixtures/log-relay-support';
import { createSinkTable } from './fixtures/relay-sink';
import {
  analyzeSink,
  spawnRelayWorker,
  stopWorker,
  type WorkerProcess,
} from './fixtures/relay-spawn';

const WORKER = 'log-relay-worker.ts';
const KILLS = 4;
const STANDBY_RETRY_MS = 250;
/**
 * The takeover bound: the dead reader's session ends with its socket (the kernel closes it),
 * and the standby tries again every STANDBY_RETRY_MS; the rest is room for a busy machine.
 */
const TAKEOVER_BOUND_MS = 15_000;
const KEYS = 8;

describe('two log-mode relay processes on one slot', () => {
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

  it('one reads, the other stands by and takes over each time the reader is killed; nothing is lost', async () => {
    const slot = `${store.schema}_standby`;
    const sink = store.names.table('sink');
    await createSinkTable(store.knex, sink);
    const base = {
      DATABASE_URL: logicalDatabaseUrl(),
      RELAY_SCHEMA: store.schema,
      RELAY_SINK: sink,
      RELAY_SLOT: slot,
      RELAY_BATCH: '20',
      RELAY_STANDBY_MS: String(STANDBY_RETRY_MS),
      // Slow enough that a kill often lands with a batch at the broker and unconfirmed.
      RELAY_PAUSE_AFTER_MS: '30',
    };
    let generation = 0;
    const spawn = (): WorkerProcess => {
      generation += 1;
      const worker = spawnRelayWorker(`relay-${generation}`, base, WORKER);
      workers.push(worker);
      return worker;
    };
    let active = spawn();
    await active.waitForLine(/^active$/);
    let standby = spawn();
    await standby.waitForLine(/^standby$/);

    // A producer commits a transaction of one event per key, each key's seq in order.
    const outbox = createOutbox({ store });
    let produced = 0;
    let producing = true;
    const producer = (async () => {
      for (let seq = 0; producing; seq += 1) {
        await store.knex.transaction((trx) =>
          outbox.add(
            trx,
            Array.from({ length: KEYS }, (_, k) => ({
              destination: 'standby',
              key: `key-${k}`,
              payload: { seq },
            })),
          ),
        );
        produced += KEYS;
        await new Promise((resolve) => setTimeout(resolve, 15));
      }
    })();

    const takeovers: number[] = [];
    for (let kill = 0; kill < KILLS; kill += 1) {
      await active.waitForLine(/^published /);
      active.child.kill('SIGKILL');
      const killedAt = performance.now();
      await active.exited;
      await standby.waitForLine(/^active$/, TAKEOVER_BOUND_MS);
      takeovers.push(Math.round(performance.now() - killedAt));
      // The killed one comes back, as the new standby.
      active = standby;
      standby = spawn();
      await standby.waitForLine(/^standby$/);
      expect(await slotActive(store.knex, slot)).toBe(true);
    }
    producing = false;
    await producer;

    await waitFor(
      'every event to reach the sink',
      async () => {
        const [row] = rowsOf<{ n: number }>(
          await store.knex.raw(`select count(distinct message_id)::int as n from ${sink}`),
        );
        return row!.n === produced;
      },
      { timeoutMs: 60_000, intervalMs: 50 },
    );
    await Promise.all([stopWorker(active), stopWorker(standby)]);
    const report = await analyzeSink(store.knex, sink);
    process.stdout.write(
      `${JSON.stringify({ test: 'relay-log-standby', produced, rows: report.rows, duplicates: report.duplicates, takeoversMs: takeovers })}\n`,
    );
    expect(takeovers).toHaveLength(KILLS);
    expect(report.distinct).toBe(produced);
    expect(report.orderViolations).toBe(0);
  });
});
