import { createOutbox, rowsOf, type Store } from '../src';
import { waitFor } from '../../../test-support/wait-for';
import { databaseUrl, mysqlUrl, openTestStore, PER_KEY_CLAIM } from './db';
import { createSinkTable } from './fixtures/relay-sink';
import {
  analyzeSink,
  spawnRelayWorker,
  stopWorker,
  type WorkerProcess,
} from './fixtures/relay-spawn';

const KEYS = 250;
const PER_KEY = 40;
const TOTAL = KEYS * PER_KEY;
const WORKERS = 4;

// On PostgreSQL's plain schema, its partitioned layout (the claim's row locks, marks and
// deletes go through the outbox's partitions) and its distributable schema (docs/scaling.md,
// whose outbox rows carry their distribution key), and on MariaDB: the claim and per-key
// order hold on all; and with the per-key claim on the distributable schema, whose every lock
// and mark is a statement of one key.
describe.each([
  ['postgres', 'plain', {}, 'batch'],
  ['postgres', 'partitioned', { layout: 'partitioned' }, 'batch'],
  ['postgres', 'distributable', PER_KEY_CLAIM.store, 'batch'],
  ['postgres', 'distributable, per-key claim', PER_KEY_CLAIM.store, PER_KEY_CLAIM.relay.claim],
  ['mysql', 'plain', {}, 'batch'],
] as const)('several relay processes over one outbox (%s, %s)', (kind, label, options, claim) => {
  let store: Store & { dispose(): Promise<void> };
  let workers: WorkerProcess[] = [];
  beforeAll(async () => {
    store = await openTestStore(kind, options);
  });
  afterAll(async () => {
    for (const w of workers) if (w.child.exitCode === null) w.child.kill('SIGKILL');
    await Promise.all(workers.map((w) => w.exited));
    await store.dispose();
  });

  it(`${WORKERS} relays publish ${TOTAL} events at least once, in order per key, without duplicates`, async () => {
    const sink = store.names.table('relay_sink');
    await createSinkTable(store.knex, sink);
    const env = {
      DATABASE_URL: kind === 'mysql' ? mysqlUrl() : databaseUrl(),
      RELAY_SCHEMA: store.schema,
      RELAY_SINK: sink,
      RELAY_BATCH: '100',
      RELAY_CONCURRENCY: '2',
      RELAY_DISTRIBUTION: 'distribution' in options ? options.distribution : 'none',
      RELAY_CLAIM: claim,
    };
    workers = Array.from({ length: WORKERS }, (_, i) => spawnRelayWorker(`w${i + 1}`, env));
    await Promise.all(workers.map((w) => w.waitForLine(/^ready$/)));

    // Events arrive while the relays run: 20 transactions, each carrying the next two
    // sequence numbers of every key, so per key the order of ids is the order of sequences.
    const outbox = createOutbox({ store });
    const started = Date.now();
    for (let round = 0; round < PER_KEY / 2; round += 1) {
      await store.knex.transaction(async (trx) => {
        const events = [];
        for (const step of [0, 1]) {
          for (let k = 0; k < KEYS; k += 1) {
            const seq = round * 2 + step;
            events.push({ destination: 'multi', key: `key-${k}`, payload: { seq } });
          }
        }
        await outbox.add(trx, events);
      });
    }
    await waitFor(
      'every event to reach the sink',
      async () => {
        const [row] = rowsOf<{ n: unknown }>(
          await store.knex.raw(`select count(distinct message_id) as n from ${sink}`),
        );
        return Number(row!.n) >= TOTAL;
      },
      { timeoutMs: 60_000, intervalMs: 50 },
    );
    const elapsedMs = Date.now() - started;
    await Promise.all(workers.map((w) => stopWorker(w)));

    const report = await analyzeSink(store.knex, sink);
    const [pending] = rowsOf<{ n: unknown }>(
      await store.knex.raw(
        `select count(*) as n from ${store.names.table('outbox')} where status <> 'published'`,
      ),
    );
    process.stdout.write(
      `${JSON.stringify({
        test: `relay-multi (${kind}, ${label})`,
        events: TOTAL,
        relays: WORKERS,
        rows: report.rows,
        duplicates: report.duplicates,
        orderViolations: report.orderViolations,
        byWorker: report.byWorker,
        elapsedMs,
      })}\n`,
    );
    expect(report.distinct).toBe(TOTAL);
    expect(report.orderViolations).toBe(0);
    // No relay crashed, so nothing may have been published twice.
    expect(report.duplicates).toBe(0);
    expect(Number(pending!.n)).toBe(0);
    expect(Object.keys(report.byWorker).length).toBeGreaterThanOrEqual(2);
  });
});
