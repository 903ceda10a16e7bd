import { createOutbox, rowsOf, type Store } from '../src';
import { waitFor } from '../../../test-support/wait-for';
import { databaseUrl, mysqlUrl, openTestStore, PER_KEY_CLAIM } from './db';

/**
 * PostgreSQL on both layouts, MariaDB on its plain one (the batch claim), and PostgreSQL's
 * distributable schema with the per-key claim: the label, the kind, the store's options and
 * the relay's claim.
 */
const CASES = [
  ['postgres', 'plain layout', { layout: 'plain' }, 'batch'],
  ['postgres', 'partitioned layout', { layout: 'partitioned' }, 'batch'],
  ['mysql', 'plain layout', { layout: 'plain' }, 'batch'],
  ['postgres', 'per-key claim', PER_KEY_CLAIM.store, PER_KEY_CLAIM.relay.claim],
] as const;
import { createSinkTable } from './fixtures/relay-sink';
import {
  analyzeSink,
  spawnRelayWorker,
  stopWorker,
  type WorkerProcess,
} from './fixtures/relay-spawn';

const KEYS = 60;
const PER_KEY = 50;
const TOTAL = KEYS * PER_KEY;

// On both layouts: the claim's row locks, marks and deletes go through the partitioned
// outbox's partitions as through the plain table.
describe.each(CASES)(
  'a relay process killed with SIGKILL in the middle of a batch (%s, %s)',
  (kind, _label, options, claim) => {
    let store: Store & { dispose(): Promise<void> };
    const workers: WorkerProcess[] = [];
    beforeAll(async () => {
      store = await openTestStore(kind, options);
    });
    afterAll(async () => {
      for (const w of workers) if (w.child.exitCode === null) w.child.kill('SIGKILL');
      await Promise.all(workers.map((w) => w.exited));
      await store.dispose();
    });

    it('loses nothing: its batch is re-published with the same ids after restart, in order', async () => {
      const sink = store.names.table('relay_sink');
      await createSinkTable(store.knex, sink);
      const base = {
        DATABASE_URL: kind === 'mysql' ? mysqlUrl() : databaseUrl(),
        RELAY_SCHEMA: store.schema,
        RELAY_SINK: sink,
        RELAY_BATCH: '50',
        // Published rows stay, so the test can count them.
        RELAY_ON_PUBLISHED: 'keep',
        RELAY_DISTRIBUTION: 'distribution' in options ? options.distribution : 'none',
        RELAY_CLAIM: claim,
      };
      // The victim holds every batch for a long time between publish and mark.
      const victim = spawnRelayWorker('victim', { ...base, RELAY_PAUSE_AFTER_INSERT_MS: '20000' });
      workers.push(victim);
      await victim.waitForLine(/^ready$/);

      const outbox = createOutbox({ store });
      await store.knex.transaction(async (trx) => {
        const events = [];
        for (let seq = 0; seq < PER_KEY; seq += 1) {
          for (let k = 0; k < KEYS; k += 1) {
            events.push({ destination: 'crash', key: `key-${k}`, payload: { seq } });
          }
        }
        await outbox.add(trx, events);
      });

      // Its first batch is at the broker (the sink) but not marked: kill it right there.
      const line = await victim.waitForLine(/^published /);
      victim.child.kill('SIGKILL');
      const exit = await victim.exited;
      expect(exit.signal).toBe('SIGKILL');
      const inFlight = Number(line.split(' ')[2]);
      expect(inFlight).toBeGreaterThan(0);
      // What reached the broker before the kill: the victim's cycles in flight, each holding
      // its batch unmarked (the line reports one lane's share of one batch).
      const [atKill] = rowsOf<{ n: unknown }>(
        await store.knex.raw(`select count(*) as n from ${sink}`),
      );
      const victimPublished = Number(atKill!.n);
      // The victim's transaction died with its connection: the batch is pending and free.
      const [pending] = rowsOf<{ n: unknown }>(
        await store.knex.raw(
          `select count(*) as n from ${store.names.table('outbox')} where status = 'pending'`,
        ),
      );
      expect(Number(pending!.n)).toBe(TOTAL);

      // A survivor, and the victim restarted.
      const survivor = spawnRelayWorker('survivor', base);
      const restarted = spawnRelayWorker('victim', base);
      workers.push(survivor, restarted);
      await Promise.all([survivor.waitForLine(/^ready$/), restarted.waitForLine(/^ready$/)]);
      await waitFor(
        'every event to be published',
        async () => {
          const [row] = rowsOf<{ n: unknown }>(
            await store.knex.raw(
              `select count(*) as n from ${store.names.table('outbox')} where status = 'published'`,
            ),
          );
          return Number(row!.n) === TOTAL;
        },
        { timeoutMs: 60_000, intervalMs: 50 },
      );
      await Promise.all([stopWorker(survivor), stopWorker(restarted)]);

      const report = await analyzeSink(store.knex, sink);
      process.stdout.write(
        `${JSON.stringify({
          test: 'relay-crash',
          events: TOTAL,
          killedBatch: inFlight,
          rows: report.rows,
          duplicates: report.duplicates,
          orderViolations: report.orderViolations,
          byWorker: report.byWorker,
        })}\n`,
      );
      expect(report.distinct).toBe(TOTAL);
      expect(report.orderViolations).toBe(0);
      // Re-published: exactly what the victim had at the broker when it died, nothing else.
      expect(report.duplicates).toBeGreaterThanOrEqual(inFlight);
      expect(report.duplicates).toBe(victimPublished);
      for (const id of report.duplicatedIds) expect(report.firstWorker.get(id)).toBe('victim');
    });
  },
);
