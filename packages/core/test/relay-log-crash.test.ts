import { createOutbox, rowsOf } from '../src';
import { waitFor } from '../../../test-support/wait-for';
import {
  confirmedLsn,
  logicalDatabaseUrl,
  openLogStore,
  type LogTestStore,
} from './fixtures/log-relay-support';
import { createSinkTable } from './fixtures/relay-sink';
import {
  analyzeSink,
  spawnRelayWorker,
  stopWorker,
  type WorkerProcess,
} from './fixtures/relay-spawn';

const KEYS = 20;
const PER_KEY = 30;
const TOTAL = KEYS * PER_KEY;
const WORKER = 'log-relay-worker.ts';

/**
 * Where the victim is killed: after it read a batch and before the broker has it; after the
 * broker has it and before the slot's position is confirmed; after the slot confirmed some of
 * the events (and while it goes on with the rest).
 */
const STEPS = ['after read', 'after publish, before confirm', 'after confirm'] as const;
type Step = (typeof STEPS)[number];

describe('a log-mode relay process killed with SIGKILL', () => {
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

  const sinkCount = async (sink: string): Promise<number> =>
    Number(
      rowsOf<{ n: number }>(await store.knex.raw(`select count(*)::int as n from ${sink}`))[0]!.n,
    );

  /** The events of one run: transactions of one event per key, each key's `seq` in order. */
  async function produce(destination: string): Promise<void> {
    const outbox = createOutbox({ store });
    for (let seq = 0; seq < PER_KEY; seq += 1) {
      await store.knex.transaction((trx) =>
        outbox.add(
          trx,
          Array.from({ length: KEYS }, (_, k) => ({
            destination,
            key: `key-${k}`,
            payload: { seq },
          })),
        ),
      );
    }
  }

  it.each(STEPS.map((step, i) => [step, i] as const))(
    '%s: loses nothing, and repeats only what it had not confirmed, with the same ids, in order',
    async (step: Step, index: number) => {
      const slot = `${store.schema}_crash${index}`;
      const sink = store.names.table(`sink${index}`);
      await createSinkTable(store.knex, sink);
      const base = {
        DATABASE_URL: logicalDatabaseUrl(),
        RELAY_SCHEMA: store.schema,
        RELAY_SINK: sink,
        RELAY_SLOT: slot,
        RELAY_BATCH: '50',
      };
      const hold: Record<string, string> =
        step === 'after read'
          ? { RELAY_PAUSE_BEFORE_MS: '60000' }
          : step === 'after publish, before confirm'
            ? { RELAY_PAUSE_AFTER_MS: '60000' }
            : { RELAY_PAUSE_AFTER_MS: '20' };
      const victim = spawnRelayWorker('victim', { ...base, ...hold }, WORKER);
      workers.push(victim);
      // Its start created the slot: from here on every commit is in it.
      await victim.waitForLine(/^active$/);
      const initial = await confirmedLsn(store.knex, slot);
      await produce(`crash${index}`);

      /** The size of the batch it held when killed, before or after the broker had it. */
      let held = 0;
      if (step === 'after read') held = Number((await victim.waitForLine(/^read /)).split(' ')[1]);
      else if (step === 'after publish, before confirm') {
        held = Number((await victim.waitForLine(/^published /)).split(' ')[2]);
      } else {
        // Two batches confirmed (each is confirmed before the next goes out), a third out.
        await victim.waitForLine(/^published 3 /);
        await waitFor(
          'the slot to confirm part of the events',
          async () => (await confirmedLsn(store.knex, slot)) !== initial,
          { timeoutMs: 30_000 },
        );
      }
      victim.child.kill('SIGKILL');
      expect((await victim.exited).signal).toBe('SIGKILL');
      const atKill = await sinkCount(sink);
      if (step === 'after read') expect(atKill).toBe(0);
      if (step === 'after publish, before confirm') expect(atKill).toBe(held);
      if (step !== 'after confirm') expect(held).toBeGreaterThan(0);

      const restarted = spawnRelayWorker('restarted', base, WORKER);
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
      process.stdout.write(
        `${JSON.stringify({ test: 'relay-log-crash', step, atKill, rows: report.rows, duplicates: report.duplicates })}\n`,
      );
      expect(report.distinct).toBe(TOTAL);
      expect(report.orderViolations).toBe(0);
      // Only what the victim had at the broker comes again, under the same ids.
      for (const id of report.duplicatedIds) expect(report.firstWorker.get(id)).toBe('victim');
      expect(report.duplicates).toBeLessThanOrEqual(atKill);
      if (step === 'after read') expect(report.duplicates).toBe(0);
      // Nothing it confirmed comes again: the unconfirmed batch at most.
      if (step === 'after publish, before confirm') expect(report.duplicates).toBe(held);
      if (step === 'after confirm') {
        const [first, second] = victim.lines
          .filter((line) => line.startsWith('published '))
          .map((line) => Number(line.split(' ')[2]));
        expect(report.duplicates).toBeLessThanOrEqual(atKill - first! - second!);
      }
    },
  );
});
