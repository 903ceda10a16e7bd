import { randomBytes } from 'node:crypto';
import {
  ConfigurationError,
  createMemoryPublisher,
  createRelay,
  createStore,
  type LogRelayOptions,
  type RelayOptions,
  type Store,
} from '../src';
import { refusal } from '../../../test-support/refusal';
import { databaseUrl, mysqlUrl, openTestStore } from './db';
import { openLogStore, type LogTestStore } from './fixtures/log-relay-support';

const publisher = createMemoryPublisher();

/** The options as given, unchecked: what a JavaScript caller could pass. */
function loose<T>(value: object): T {
  return value as T;
}

describe("mode 'log': options refused when the relay is created", () => {
  // Creating a relay reads nothing from the database: stores that were never migrated do.
  let pglite: Store;
  let mysql: Store;
  let postgres: Store;
  beforeAll(async () => {
    [pglite, mysql, postgres] = await Promise.all([
      createStore({ pglite: {} }),
      createStore({ connectionString: mysqlUrl() }),
      createStore({ connectionString: databaseUrl() }),
    ]);
  });
  afterAll(async () => {
    await Promise.all([pglite.close(), mysql.close(), postgres.close()]);
  });

  it.each([
    ['pglite', () => pglite],
    ['mysql', () => mysql],
  ])('on a %s store: polling is the only mode', (_label, store: () => Store) => {
    const error = refusal(() => createRelay({ store: store(), publisher, mode: 'log' }));
    expect(error.message).toContain("mode 'log'");
    expect(error.message).toContain('polling');
    // Polling, by default or by name, is fine there.
    expect(createRelay({ store: store(), publisher, mode: 'poll' }).running).toBe(false);
  });

  it('refuses an unknown mode, log options in the polling mode, and the polling options in log mode', () => {
    const store = postgres;
    expect(refusal(() => createRelay(loose({ store, publisher, mode: 'wal' }))).message).toBe(
      "mode must be 'poll' or 'log'",
    );
    expect(refusal(() => createRelay({ store, publisher, log: { slot: 'x' } })).message).toBe(
      "log options apply to mode 'log' only",
    );
    const pollOnly = refusal(() =>
      createRelay({ store, publisher, mode: 'log', concurrency: 4, onPublished: 'keep' }),
    );
    expect(pollOnly.message).toBe("concurrency, onPublished apply to mode 'poll' only");
  });

  it('refuses a misspelt log option, a bad name and out-of-range numbers', () => {
    const store = postgres;
    const misspelt = refusal(() =>
      createRelay({ store, publisher, mode: 'log', log: loose({ slots: 'a' }) }),
    );
    expect(misspelt.message).toContain('log.slots');
    expect(misspelt.message).toContain('log.slot');
    const cutOver = refusal(() =>
      createRelay({ store, publisher, mode: 'log', log: loose({ takeOverFromPolling: 'poll' }) }),
    );
    expect(cutOver.message).toContain('log.takeOverFromPolling');
    for (const log of [
      { slot: 'Has-Capitals' },
      { slot: '' },
      { slot: 'x'.repeat(64) },
      { publication: 'a"b' },
      { create: 'yes' },
      { standbyRetryMs: 10 },
      { statusIntervalMs: 60_000 },
      { takeOverFromPolling: 'yes' },
      { takeOverFromPolling: 1 },
    ]) {
      expect(() =>
        createRelay({ store, publisher, mode: 'log', log: loose<LogRelayOptions>(log) }),
      ).toThrow(ConfigurationError);
    }
  });

  it('takes every option it documents', () => {
    const log: Required<LogRelayOptions> = {
      slot: 'a_slot',
      publication: 'a_publication',
      create: false,
      standbyRetryMs: 500,
      statusIntervalMs: 1_000,
      takeOverFromPolling: true,
    };
    const options: RelayOptions = {
      store: postgres,
      publisher,
      mode: 'log',
      log,
      batchSize: 10,
      maxAttempts: 3,
      backoff: { baseMs: 10, capMs: 100 },
      publishTimeoutMs: 1_000,
      ownerId: 'log-relay',
    };
    expect(createRelay(options).ownerId).toBe('log-relay');
  });
});

describe("mode 'log': the server and the role are checked when the relay starts", () => {
  it('refuses a server whose wal_level is not logical, and stays stopped', async () => {
    // The machine's main server runs with wal_level = replica.
    const store = await openTestStore('postgres');
    try {
      const relay = createRelay({ store, publisher, mode: 'log' });
      const error = await relay.start().catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ConfigurationError);
      expect((error as Error).message).toContain('wal_level = logical');
      expect(relay.running).toBe(false);
      await expect(relay.runOnce()).rejects.toThrow(ConfigurationError);
    } finally {
      await store.dispose();
    }
  });

  describe('on the logical server', () => {
    let store: LogTestStore;
    const role = `jo_norepl_${randomBytes(4).toString('hex')}`;
    beforeAll(async () => {
      store = await openLogStore();
      await store.knex.raw(`create role ${role} login nosuperuser noreplication`);
      await store.knex.raw(`grant all on schema "${store.schema}" to ${role}`);
    });
    afterAll(async () => {
      await store.knex.raw(`drop owned by ${role} cascade`);
      await store.knex.raw(`drop role ${role}`);
      await store.dispose();
    });

    it('refuses a role without REPLICATION', async () => {
      const url = new URL(process.env.LOGICAL_DATABASE_URL!);
      url.username = role;
      const weak = await createStore({ connectionString: url.toString(), schema: store.schema });
      try {
        const error = await createRelay({ store: weak, publisher, mode: 'log' })
          .start()
          .catch((e: unknown) => e);
        expect(error).toBeInstanceOf(ConfigurationError);
        expect((error as Error).message).toContain(`alter role ${role} with replication`);
      } finally {
        await weak.close();
      }
    });

    it('with create: false, names the statements that make a missing publication and slot', async () => {
      const name = `${store.schema}_manual`;
      const relay = () =>
        createRelay({ store, publisher, mode: 'log', log: { slot: name, create: false } });
      const noPublication = await relay()
        .start()
        .catch((e: unknown) => e);
      expect(noPublication).toBeInstanceOf(ConfigurationError);
      const create = `create publication "${name}" for table ${store.names.table('outbox')} with (publish = 'insert')`;
      expect((noPublication as Error).message).toContain(create);
      await store.knex.raw(create);
      const noSlot = await relay()
        .start()
        .catch((e: unknown) => e);
      expect((noSlot as Error).message).toContain(
        `select pg_create_logical_replication_slot('${name}', 'pgoutput')`,
      );
      await store.knex.raw(`select pg_create_logical_replication_slot(?, 'pgoutput')`, [name]);
      // Both made by hand: it starts.
      const ready = relay();
      await ready.start();
      await ready.stop();
    });

    it('refuses a publication of that name that does not cover the outbox', async () => {
      const name = `${store.schema}_other`;
      await store.knex.raw(`create table "${store.schema}".other (id int primary key)`);
      await store.knex.raw(`create publication "${name}" for table "${store.schema}".other`);
      const error = await createRelay({ store, publisher, mode: 'log', log: { slot: name } })
        .start()
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ConfigurationError);
      expect((error as Error).message).toContain(`publication ${name} does not cover`);
    });
  });
});
