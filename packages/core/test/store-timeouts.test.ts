import {
  StoreTimeoutError,
  createInbox,
  createMemoryPublisher,
  createOutbox,
  createRelay,
  createStore,
  rowsOf,
  type HandlerContext,
  type Logger,
  type Relay,
  type Store,
  type StoreTimeouts,
} from '../src';
import { startBlackholeProxy, type BlackholeProxy } from '../../../test-support/blackhole-proxy';
import { waitFor } from '../../../test-support/wait-for';
import { isConnectionLoss } from '../src/store/errors/connection-loss';
import { databaseUrl, openTestStore } from './db';
import { envelope, freshId, recordingLogger, type LogLine } from './fixtures/inbox-support';

/**
 * A network partition to PostgreSQL, played by a proxy that holds every byte (docs/
 * failure-modes.md): each call fails with a typed, retriable error within its limit, the
 * connection it was on is never used again, and everything works again soon after the heal.
 */

/** Small limits, so that the whole file runs in well under a minute. */
const LIMITS: StoreTimeouts = {
  connectMs: 1_000,
  queryMs: 1_500,
  statementMs: 1_000,
  acquireMs: 3_000,
  listenCheckMs: 1_000,
};
/** Slack on top of a limit for timers, the event loop and a busy machine. */
const SLACK_MS = 1_000;

let direct: Store & { dispose(): Promise<void> };
const opened: Array<{ proxy: BlackholeProxy; store: Store }> = [];

beforeAll(async () => {
  direct = await openTestStore('postgres');
});
afterAll(async () => {
  await direct.dispose();
});
afterEach(async () => {
  for (const { proxy, store } of opened.splice(0)) {
    proxy.heal();
    await store.close();
    await proxy.close();
  }
});

/** A store on the test schema whose connections all go through a fresh proxy. */
async function throughProxy(logger?: Logger): Promise<{ proxy: BlackholeProxy; store: Store }> {
  const target = new URL(databaseUrl());
  const proxy = await startBlackholeProxy(target.hostname, Number(target.port || 5432));
  const store = await createStore({
    connectionString: proxy.via(databaseUrl()),
    schema: direct.schema,
    timeouts: LIMITS,
    logger,
  });
  opened.push({ proxy, store });
  return { proxy, store };
}

/** What `run` rejected with, and how long it took. */
async function failure(run: () => Promise<unknown>): Promise<{ error: unknown; ms: number }> {
  const started = performance.now();
  const error = await run().then(
    () => new Error('expected the call to fail'),
    (e: unknown) => e,
  );
  return { error, ms: performance.now() - started };
}

const pidOf = (result: unknown): number => rowsOf<{ pid: number }>(result)[0]!.pid;

const logged = (lines: readonly LogLine[], text: string): LogLine | undefined =>
  lines.find((line) => line.message.includes(text));

describe('store time limits through a partitioned network (postgres)', () => {
  it('fails a statement with STORE_TIMEOUT within queryMs and never reuses its connection', async () => {
    const { logger, lines } = recordingLogger();
    const { proxy, store } = await throughProxy(logger);
    const table = `${store.names.schema}."probe_${freshId('t').replace(/-/g, '_')}"`;
    await direct.knex.raw(`create table ${table} (id int primary key)`);

    const trx = await store.knex.transaction();
    await trx.raw(`insert into ${table} values (1)`);
    const abandoned = pidOf(await trx.raw('select pg_backend_pid() as pid'));

    proxy.blackhole();
    const stuck = await failure(() => trx.raw(`insert into ${table} values (2)`));
    expect(stuck.error).toBeInstanceOf(StoreTimeoutError);
    expect(stuck.error).toMatchObject({ code: 'STORE_TIMEOUT', retriable: true, limit: 'query' });
    expect(stuck.ms).toBeGreaterThanOrEqual(LIMITS.queryMs! - 50);
    expect(stuck.ms).toBeLessThan(LIMITS.queryMs! + SLACK_MS);
    expect(logged(lines, 'connection destroyed')).toMatchObject({ level: 'warn' });
    // The rollback does not wait on the dead connection either.
    const rollback = await failure(() => trx.rollback());
    expect(rollback.ms).toBeLessThan(500);

    // A new call needs a new connection, which cannot be made while the network is down.
    const connecting = await failure(() => store.knex.raw('select 1'));
    expect(connecting.error).toMatchObject({ code: 'STORE_TIMEOUT', limit: 'connect' });
    expect(connecting.ms).toBeLessThan(LIMITS.connectMs! + SLACK_MS);

    proxy.heal();
    const healed = performance.now();
    const fresh = pidOf(await store.knex.raw('select pg_backend_pid() as pid'));
    expect(performance.now() - healed).toBeLessThan(3_000);
    expect(fresh).not.toBe(abandoned);

    // A transaction begun now is a new one on a new session: the abandoned insert is not in
    // it, and its own insert of the same key commits once the server has ended that session.
    await store.knex.transaction(async (t) => {
      expect(pidOf(await t.raw('select pg_backend_pid() as pid'))).not.toBe(abandoned);
      expect(rowsOf(await t.raw(`select id from ${table}`))).toEqual([]);
      await t.raw(`insert into ${table} values (1)`);
    });
    expect(performance.now() - healed).toBeLessThan(3_000);
    expect(rowsOf(await direct.knex.raw(`select id from ${table} order by id`))).toEqual([
      { id: 1 },
    ]);
    await waitFor(
      'the abandoned session to end',
      async () =>
        rowsOf(await direct.knex.raw('select 1 from pg_stat_activity where pid = ?', [abandoned]))
          .length === 0,
      { timeoutMs: 5_000 },
    );
  });

  it('makes inbox.process throw (retriable, caused by STORE_TIMEOUT, not dead-lettered), then process once after the heal', async () => {
    const { proxy, store } = await throughProxy();
    const inbox = createInbox({ store, consumer: freshId('consumer') });
    const handled: string[] = [];
    const handler = async (ctx: HandlerContext): Promise<void> => {
      handled.push(ctx.messageId);
    };
    // A warm pooled connection, as a running consumer has.
    await store.knex.raw('select 1');
    const id = freshId('msg');

    proxy.blackhole();
    const stuck = await failure(() => inbox.process(envelope(id), handler));
    // The inbox reports any fault of the store as STORE_UNAVAILABLE; the time limit that
    // fired is its cause.
    expect(stuck.error).toMatchObject({ code: 'STORE_UNAVAILABLE', retriable: true });
    expect((stuck.error as Error).cause).toBeInstanceOf(StoreTimeoutError);
    expect(stuck.ms).toBeLessThan(Math.max(LIMITS.queryMs!, LIMITS.connectMs!) + SLACK_MS);
    expect(handled).toEqual([]);

    proxy.heal();
    const healed = performance.now();
    const outcome = await inbox.process(envelope(id), handler);
    expect(outcome.status).toBe('processed');
    expect(performance.now() - healed).toBeLessThan(3_000);
    expect((await inbox.process(envelope(id), handler)).status).toBe('duplicate');
    expect(handled).toEqual([id]);
    const letters = await direct.knex.raw(
      `select count(*)::int as n from ${direct.names.table('dead_letters')} where message_id = ?`,
      [id],
    );
    expect(rowsOf<{ n: number }>(letters)[0]!.n).toBe(0);
  });

  it('notices a dead LISTEN connection within twice listenCheckMs and listens again after the heal', async () => {
    const { logger, lines } = recordingLogger();
    const { proxy, store } = await throughProxy(logger);
    const publisher = createMemoryPublisher();
    const destination = freshId('dest');
    // Polling so slow that only a notification (or the wake after a reconnect) can find events.
    const relay: Relay = createRelay({ store, publisher, logger, pollIntervalMs: 60_000 });
    const add = (n: number): Promise<string[]> =>
      direct.knex.transaction((trx) =>
        createOutbox({ store: direct }).add(trx, { destination, key: 'k', payload: { n } }),
      );
    const sent = (): number =>
      publisher.published.filter((m) => m.destination === destination).length;
    await relay.start();
    try {
      await add(1);
      await waitFor('the first event to be published', () => sent() === 1, { timeoutMs: 5_000 });

      proxy.blackhole();
      const cut = performance.now();
      await waitFor(
        'the lost notification connection to be logged',
        () => logged(lines, 'notification connection lost'),
        { timeoutMs: 2 * LIMITS.listenCheckMs! + SLACK_MS },
      );
      expect(performance.now() - cut).toBeLessThan(2 * LIMITS.listenCheckMs! + SLACK_MS);

      proxy.heal();
      await waitFor(
        'the notification connection to be restored',
        () => logged(lines, 'notification connection restored'),
        { timeoutMs: 15_000 },
      );
      await add(2);
      await waitFor('the event added after the heal to be published', () => sent() === 2, {
        timeoutMs: 5_000,
      });
      expect(logged(lines, 'relay: cycle failed')).toBeUndefined();
    } finally {
      await relay.stop();
    }
  });

  it('times a connect to a partitioned server out within connectMs', async () => {
    const { proxy, store } = await throughProxy();
    proxy.blackhole();
    const stuck = await failure(() => store.knex.raw('select 1'));
    expect(stuck.error).toBeInstanceOf(StoreTimeoutError);
    expect(stuck.error).toMatchObject({ code: 'STORE_TIMEOUT', retriable: true, limit: 'connect' });
    expect((stuck.error as Error).cause).toBeInstanceOf(Error);
    expect(stuck.ms).toBeGreaterThanOrEqual(LIMITS.connectMs! - 50);
    expect(stuck.ms).toBeLessThan(LIMITS.connectMs! + SLACK_MS);
  });
});

describe('connections dropped by the server (a restart, postgres)', () => {
  it('logs the relay losing its connections as such, listens again and publishes', async () => {
    const { logger, lines } = recordingLogger();
    const app = freshId('jo_restart').replace(/-/g, '_');
    const url = new URL(databaseUrl());
    url.searchParams.set('application_name', app);
    const store = await createStore({
      connectionString: url.toString(),
      schema: direct.schema,
      timeouts: LIMITS,
      logger,
    });
    const publisher = createMemoryPublisher();
    const destination = freshId('dest');
    const relay = createRelay({ store, publisher, logger, pollIntervalMs: 60_000 });
    const add = (n: number): Promise<string[]> =>
      direct.knex.transaction((trx) =>
        createOutbox({ store: direct }).add(trx, { destination, key: 'k', payload: { n } }),
      );
    const sent = (): number =>
      publisher.published.filter((m) => m.destination === destination).length;
    await relay.start();
    try {
      await add(1);
      await waitFor('the first event to be published', () => sent() === 1, { timeoutMs: 5_000 });
      // What a restart does to the sessions: the server ends them (57P01).
      await direct.knex.raw(
        'select pg_terminate_backend(pid) from pg_stat_activity where application_name = ?',
        [app],
      );
      const dropped = performance.now();
      await waitFor('the LISTEN connection to come back', () =>
        logged(lines, 'notification connection restored'),
      );
      await add(2);
      await waitFor('the event added afterwards to be published', () => sent() === 2, {
        timeoutMs: 5_000,
      });
      expect(performance.now() - dropped).toBeLessThan(10_000);
      expect(logged(lines, 'notification connection lost')).toBeDefined();
      expect(logged(lines, 'relay: cycle failed')).toBeUndefined();
    } finally {
      await relay.stop();
      await store.close();
    }
  });

  it('recognises the errors of a dropped connection', () => {
    for (const message of [
      'Transaction query already complete, run with DEBUG=knex:tx for more info',
      'Connection terminated unexpectedly',
      'Client has encountered a connection error and is not queryable',
    ]) {
      expect(isConnectionLoss(new Error(message))).toBe(true);
    }
    expect(isConnectionLoss(Object.assign(new Error('x'), { code: '57P01' }))).toBe(true);
    expect(isConnectionLoss(new StoreTimeoutError('query', 1))).toBe(true);
    expect(isConnectionLoss(Object.assign(new Error('dup'), { code: '23505' }))).toBe(false);
  });
});

describe('store time limit options', () => {
  it('refuses an unknown limit and a bad value', async () => {
    await expect(
      createStore({ connectionString: databaseUrl(), timeouts: { queryMS: 1 } as StoreTimeouts }),
    ).rejects.toMatchObject({
      code: 'INVALID_CONFIG',
      message: expect.stringContaining('did you mean `timeouts.queryMs`'),
    });
    await expect(
      createStore({ connectionString: databaseUrl(), timeouts: { connectMs: -1 } }),
    ).rejects.toMatchObject({ code: 'INVALID_CONFIG' });
    for (const livenessMs of [-1, 1.5, '5000' as unknown as number]) {
      await expect(
        createStore({ connectionString: databaseUrl(), timeouts: { livenessMs } }),
      ).rejects.toMatchObject({
        code: 'INVALID_CONFIG',
        message: expect.stringContaining('timeouts.livenessMs'),
      });
    }
    await expect(
      createStore({ connectionString: databaseUrl(), keepAlive: { delayMs: 1 } as never }),
    ).rejects.toMatchObject({ code: 'INVALID_CONFIG' });
  });

  it('sets the server-side limits on every connection and exposes the limits in force', async () => {
    const store = await createStore({
      connectionString: databaseUrl(),
      timeouts: { statementMs: 12_000, idleInTransactionMs: 34_000 },
    });
    try {
      const row = rowsOf<{ statement: string; idle: string }>(
        await store.knex.raw(
          `select current_setting('statement_timeout') as statement,
                  current_setting('idle_in_transaction_session_timeout') as idle`,
        ),
      )[0];
      expect(row).toEqual({ statement: '12s', idle: '34s' });
      expect(store.timeouts).toMatchObject({
        statementMs: 12_000,
        queryMs: 35_000,
        listenCheckMs: 5_000,
        livenessMs: 5_000,
      });
    } finally {
      await store.close();
    }
  });
});
