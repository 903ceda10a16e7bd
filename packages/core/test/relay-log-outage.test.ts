import { createMemoryPublisher, createOutbox, createRelay, type Logger, type Relay } from '../src';
import {
  LOGICAL_SETTINGS,
  privatePostgresUnavailable,
  startPrivatePostgres,
  type PrivatePostgres,
} from '../../../test-support/private-postgres';
import { waitFor } from '../../../test-support/wait-for';
import { openLogStore, type LogTestStore } from './fixtures/log-relay-support';

// A machine that cannot start a private cluster fails here, saying why.
const unavailable = privatePostgresUnavailable();

describe('a log-mode relay across a server restart', () => {
  let pg: PrivatePostgres;
  let store: LogTestStore;
  let relay: Relay | undefined;
  beforeAll(async () => {
    if (unavailable !== undefined) throw new Error(`no private PostgreSQL here: ${unavailable}`);
    pg = await startPrivatePostgres({ settings: LOGICAL_SETTINGS });
    store = await openLogStore(pg.url);
  });
  afterAll(async () => {
    await relay?.stop({ timeoutMs: 5_000 });
    await store?.dispose();
    await pg?.dispose();
  });

  it.each(['fast', 'immediate'] as const)(
    'reconnects after a %s shutdown and loses nothing; what it repeats keeps its ids',
    async (mode) => {
      const warnings: string[] = [];
      const logger: Logger = {
        debug: () => undefined,
        info: () => undefined,
        warn: (message) => warnings.push(message),
        error: (message) => warnings.push(message),
      };
      const publisher = createMemoryPublisher();
      relay = createRelay({
        store,
        publisher,
        mode: 'log',
        logger,
        log: { slot: `${store.schema}_${mode}`, statusIntervalMs: 200 },
      });
      await relay.start();
      const outbox = createOutbox({ store });
      const produce = async (from: number, count: number): Promise<void> => {
        for (let seq = from; seq < from + count; seq += 1) {
          await store.knex.transaction((trx) =>
            outbox.add(trx, { destination: mode, key: 'k', payload: { seq } }),
          );
        }
      };
      await produce(0, 20);
      await publisher.waitForCount(20);
      await pg.restart({ mode });
      // The store's pool finds the server again on its own; the relay reconnects.
      await waitFor(
        'the store to answer again',
        () =>
          store.knex.raw('select 1').then(
            () => true,
            () => false,
          ),
        { timeoutMs: 30_000, intervalMs: 100 },
      );
      await produce(20, 20);
      await waitFor(
        'every event after the restart',
        () => new Set(publisher.byKey('k').map((m) => m.messageId)).size === 40,
        { timeoutMs: 60_000, intervalMs: 50 },
      );
      const seqs = publisher
        .byKey('k')
        .map((m) => (JSON.parse(Buffer.from(m.payload).toString()) as { seq: number }).seq);
      // First sightings in order: a repeat (an unconfirmed batch after a crash) is a duplicate.
      const first = seqs.filter((seq, i) => seqs.indexOf(seq) === i);
      expect(first).toEqual(Array.from({ length: 40 }, (_, i) => i));
      expect(warnings).toContain('relay: replication stream failed; will retry');
      await relay.stop();
      relay = undefined;
    },
  );
});
