import { createOutbox, rowsOf } from '../src';
import { waitFor } from '../../../test-support/wait-for';
import { logicalDatabaseUrl, openLogStore, type LogTestStore } from './fixtures/log-relay-support';
import { createSinkTable } from './fixtures/relay-sink';
import {
  analyzeSink,
  spawnRelayWorker,
  stopWorker,
  type WorkerProcess,
} from './fixtures/relay-spawn';

const KEYS = 20;
/** Each key's events left pending by the (stopped) polling relays, then added after the slot. */
const BEFORE = 10;
const AFTER = 20;
const TOTAL = KEYS * (BEFORE + AFTER);
const WORKER = 'log-relay-worker.ts';

/** Where the victim is killed: while it publishes the rows up to the boundary, or after. */
const STEPS = ['during the leftovers', 'while streaming'] as const;
type Step = (typeof STEPS)[number];

describe('a log relay killed with SIGKILL while it takes over from polling', () => {
  const stores: LogTestStore[] = [];
  const workers: WorkerProcess[] = [];
  afterAll(async () => {
    for (const w of workers) if (w.child.exitCode === null) w.child.kill('SIGKILL');
    await Promise.all(workers.map((w) => w.exited));
    await Promise.all(stores.map((store) => store.dispose()));
  });

  /** Transactions of one event per key, each key's `seq` from `from` in order. */
  async function produce(store: LogTestStore, from: number, count: number): Promise<void> {
    const outbox = createOutbox({ store });
    for (let seq = from; seq < from + count; seq += 1) {
      await store.knex.transaction((trx) =>
        outbox.add(
          trx,
          Array.from({ length: KEYS }, (_, k) => ({
            destination: 'cutover',
            key: `key-${k}`,
            payload: { seq },
          })),
        ),
      );
    }
  }

  const cutOverDone = async (store: LogTestStore, slot: string): Promise<boolean> =>
    rowsOf<{ done: boolean }>(
      await store.knex.raw(
        `select done from ${store.names.table('relay_cutover')} where slot = ?`,
        [slot],
      ),
    )[0]?.done === true;

  it.each(STEPS)(
    '%s: loses nothing, keeps each key in order, repeats only what it had at the broker',
    async (step: Step) => {
      // A schema of its own: the rows a step leaves pending are not the next step's leftovers.
      const store = await openLogStore();
      stores.push(store);
      const slot = `${store.schema}_cutover`;
      const sink = store.names.table('sink');
      await createSinkTable(store.knex, sink);
      await produce(store, 0, BEFORE);
      const base = {
        DATABASE_URL: logicalDatabaseUrl(),
        RELAY_SCHEMA: store.schema,
        RELAY_SINK: sink,
        RELAY_SLOT: slot,
        RELAY_BATCH: '50',
        RELAY_TAKEOVER: '1',
        RELAY_PAUSE_AFTER_MS: '20',
      };
      const victim = spawnRelayWorker('victim', base, WORKER);
      workers.push(victim);
      await victim.waitForLine(/^active$/);
      if (step === 'during the leftovers') {
        await victim.waitForLine(/^published 2 /);
        expect(await cutOverDone(store, slot)).toBe(false);
      } else {
        await produce(store, BEFORE, AFTER);
        await waitFor('the leftovers to be done', () => cutOverDone(store, slot), {
          timeoutMs: 30_000,
        });
        // Two batches past the four of leftovers: it is streaming from the slot.
        await victim.waitForLine(/^published 6 /);
      }
      victim.child.kill('SIGKILL');
      expect((await victim.exited).signal).toBe('SIGKILL');
      const [{ n: atKill }] = rowsOf<{ n: number }>(
        await store.knex.raw(`select count(*)::int as n from ${sink}`),
      ) as [{ n: number }];
      if (step === 'during the leftovers') await produce(store, BEFORE, AFTER);

      const restarted = spawnRelayWorker(
        'restarted',
        { ...base, RELAY_PAUSE_AFTER_MS: '0' },
        WORKER,
      );
      workers.push(restarted);
      await waitFor(
        'every event to reach the sink',
        async () => {
          const [row] = rowsOf<{ n: number }>(
            await store.knex.raw(`select count(distinct message_id)::int as n from ${sink}`),
          );
          return row!.n === TOTAL;
        },
        { timeoutMs: 60_000, intervalMs: 50 },
      );
      await stopWorker(restarted);

      const report = await analyzeSink(store.knex, sink);
      expect(report.distinct).toBe(TOTAL);
      expect(report.orderViolations).toBe(0);
      // Only what the victim had at the broker comes again, under the same ids.
      for (const id of report.duplicatedIds) expect(report.firstWorker.get(id)).toBe('victim');
      expect(report.duplicates).toBeLessThanOrEqual(atKill);
      expect(await cutOverDone(store, slot)).toBe(true);
    },
    90_000,
  );
});
