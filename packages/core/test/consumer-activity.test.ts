/**
 * Per-minute consumer activity (`consumer_activity`): the inbox counts handled, duplicate and
 * dead-lettered deliveries in memory and adds them with one upsert per flush, off the hot path.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import {
  createAdmin,
  createInbox,
  markNonRetriable,
  rowsOf,
  type HandlerContext,
  type InboxOptions,
} from '../src';
import { createActivityRecorder, MAX_PENDING_MINUTES } from '../src/inbox/activity';
import { ALL_STORE_KINDS, databaseUrl, openTestStore, uniqueSchema } from './db';
import { envelope, freshId, recordingLogger } from './fixtures/inbox-support';
import { waitFor } from '../../../test-support/wait-for';

type TestStore = Awaited<ReturnType<typeof openTestStore>>;

interface Totals {
  handled: number;
  duplicates: number;
  deadLettered: number;
  rows: number;
}

/** Totals in MySQL's terms: no `::int`, no `filter`, and its counts come back as text. */
const MYSQL_TOTALS = `select coalesce(sum(handled), 0) as handled,
            coalesce(sum(duplicates), 0) as duplicates,
            coalesce(sum(dead_lettered), 0) as dead_lettered, count(*) as \`rows\`,
            coalesce(sum(second(minute) <> 0 or microsecond(minute) <> 0), 0) as not_whole`;

async function totals(store: TestStore, consumer: string): Promise<Totals> {
  if (store.dialect === 'mysql') {
    const result = await store.knex.raw(
      `${MYSQL_TOTALS} from ${store.names.table('consumer_activity')} where consumer = ?`,
      [consumer],
    );
    const row = rowsOf<Record<string, string | number>>(result)[0]!;
    expect(Number(row.not_whole)).toBe(0);
    return {
      handled: Number(row.handled),
      duplicates: Number(row.duplicates),
      deadLettered: Number(row.dead_lettered),
      rows: Number(row.rows),
    };
  }
  const result = await store.knex.raw(
    `select coalesce(sum(handled), 0)::int as handled, coalesce(sum(duplicates), 0)::int as duplicates,
            coalesce(sum(dead_lettered), 0)::int as dead_lettered, count(*)::int as rows,
            count(*) filter (where extract(second from minute) <> 0)::int as not_whole
       from ${store.names.table('consumer_activity')} where consumer = ?`,
    [consumer],
  );
  const row = rowsOf<{
    handled: number;
    duplicates: number;
    dead_lettered: number;
    rows: number;
    not_whole: number;
  }>(result)[0]!;
  expect(row.not_whole).toBe(0);
  return {
    handled: row.handled,
    duplicates: row.duplicates,
    deadLettered: row.dead_lettered,
    rows: row.rows,
  };
}

const ok = async () => 'ok';
const poison = async () => {
  throw markNonRetriable(new Error('bad message'));
};
const flaky = async () => {
  throw new Error('try again');
};

describe.each(ALL_STORE_KINDS)('consumer activity on %s', (kind) => {
  let store: TestStore;

  beforeAll(async () => {
    store = await openTestStore(kind);
  });
  afterAll(async () => {
    await store.dispose();
  });

  /** Renames the activity table away (so flushes fail), or back. */
  async function setAside(away: boolean): Promise<void> {
    const [from, to] = away
      ? ['consumer_activity', 'consumer_activity_aside']
      : ['consumer_activity_aside', 'consumer_activity'];
    await store.knex.raw(
      kind === 'mysql'
        ? `rename table ${store.names.table(from)} to ${store.names.table(to)}`
        : `alter table ${store.names.table(from)} rename to ${store.names.name(to)}`,
    );
  }

  const inboxFor = (consumer: string, extra: Partial<InboxOptions> = {}) =>
    createInbox({ store, consumer, activityFlushMs: 60_000, ...extra });

  it('counts processed, duplicate and dead-lettered per minute; failures are not counted', async () => {
    const consumer = freshId('c');
    const inbox = inboxFor(consumer);
    const id = freshId();
    expect((await inbox.process(envelope(id), ok)).status).toBe('processed');
    expect((await inbox.process(envelope(id), ok)).status).toBe('duplicate');
    expect((await inbox.process(envelope(freshId()), poison)).status).toBe('dead-lettered');
    // The same id with another body: a payload conflict, counted as dead-lettered.
    expect((await inbox.process(envelope(id, 'other'), ok)).status).toBe('dead-lettered');
    expect((await inbox.process(envelope(freshId()), flaky)).status).toBe('failed');
    // Nothing is written before a flush.
    expect((await totals(store, consumer)).rows).toBe(0);

    await inbox.flushActivity();
    expect(await totals(store, consumer)).toMatchObject({
      handled: 1,
      duplicates: 1,
      deadLettered: 2,
    });

    // Batch mode counts too: a repeat inside the batch is a duplicate.
    const [a, b] = [freshId(), freshId()];
    const outcomes = await inbox.processBatch([envelope(a), envelope(b), envelope(a)], ok);
    expect(outcomes.map((o) => o.status)).toEqual(['processed', 'processed', 'duplicate']);
    await inbox.flushActivity();
    expect(await totals(store, consumer)).toMatchObject({
      handled: 3,
      duplicates: 2,
      deadLettered: 2,
    });
    // A second flush with nothing pending writes nothing.
    await inbox.flushActivity();
    expect((await totals(store, consumer)).handled).toBe(3);

    const status = await createAdmin(store).status();
    expect(status.consumers.find((c) => c.name === consumer)).toEqual({
      name: consumer,
      handledLastHour: 3,
      duplicatesLastHour: 2,
      deadLetteredLastHour: 2,
    });
  });

  it('two inboxes of one consumer add up in the same rows', async () => {
    const consumer = freshId('c');
    const first = inboxFor(consumer);
    const second = inboxFor(consumer);
    const id = freshId();
    await first.process(envelope(id), ok);
    await second.process(envelope(id), ok);
    await first.process(envelope(freshId()), ok);
    await second.process(envelope(freshId()), ok);
    await second.process(envelope(id), ok);
    await Promise.all([first.flushActivity(), second.flushActivity()]);
    expect(await totals(store, consumer)).toMatchObject({
      handled: 3,
      duplicates: 2,
      deadLettered: 0,
    });
  });

  it('a failed flush keeps the counts for the next one and logs a warning', async () => {
    const consumer = freshId('c');
    const { logger, lines } = recordingLogger();
    const inbox = inboxFor(consumer, { logger });
    const id = freshId();
    await inbox.process(envelope(id), ok);
    await inbox.process(envelope(id), ok);

    await setAside(true);
    try {
      await expect(inbox.flushActivity()).resolves.toBeUndefined();
      await inbox.process(envelope(id), ok);
    } finally {
      await setAside(false);
    }
    expect(lines.filter((l) => l.level === 'warn').map((l) => l.message)).toEqual([
      'inbox: could not write activity counts; keeping them for the next flush',
    ]);
    await inbox.flushActivity();
    expect(await totals(store, consumer)).toMatchObject({ handled: 1, duplicates: 2 });
  });

  it('keeps at most two hours of unwritten minutes, warning once', async () => {
    const consumer = freshId('c');
    const { logger, lines } = recordingLogger();
    let now = Date.UTC(2026, 0, 1);
    const recorder = createActivityRecorder({
      store,
      consumer,
      logger,
      flushMs: 60_000,
      now: () => now,
    });
    const table = store.names.table('consumer_activity');
    await setAside(true);
    try {
      for (let minute = 0; minute < MAX_PENDING_MINUTES + 10; minute += 1) {
        recorder.record({ status: 'duplicate', messageId: 'm', scope: 'default' });
        now += 60_000;
      }
      await recorder.flush();
      await recorder.flush();
    } finally {
      await setAside(false);
    }
    await recorder.flush();
    expect(await totals(store, consumer)).toMatchObject({
      duplicates: MAX_PENDING_MINUTES,
      rows: MAX_PENDING_MINUTES,
    });
    const dropped = lines.filter((l) => l.message.includes('dropping the oldest minutes'));
    expect(dropped).toHaveLength(1);
    // The newest minutes were kept.
    const oldest = rowsOf<{ minute: Date | string }>(
      await store.knex.raw(`select min(minute) as minute from ${table} where consumer = ?`, [
        consumer,
      ]),
    )[0]!;
    expect(new Date(oldest.minute).getTime()).toBe(Date.UTC(2026, 0, 1) + 10 * 60_000);
  });

  it('activityFlushMs: 0 records nothing', async () => {
    const consumer = freshId('c');
    const inbox = inboxFor(consumer, { activityFlushMs: 0 });
    const id = freshId();
    await inbox.process(envelope(id), ok);
    await inbox.process(envelope(id), ok);
    await inbox.flushActivity();
    expect((await totals(store, consumer)).rows).toBe(0);
  });

  it('flushes on its own after activityFlushMs, also while a handler holds a connection', async () => {
    const consumer = freshId('c');
    const inbox = inboxFor(consumer, { activityFlushMs: 20 });
    await inbox.process(envelope(freshId()), ok);
    // The timer fires while this handler holds a connection (PGlite's only one): the flush
    // waits its turn instead of deadlocking.
    const slow = async (ctx: HandlerContext) => {
      await ctx.trx.raw('select 1');
      await new Promise((resolve) => setTimeout(resolve, 200));
      return 'slow';
    };
    expect((await inbox.process(envelope(freshId()), slow)).status).toBe('processed');
    await waitFor('both counts flushed', async () => (await totals(store, consumer)).handled === 2);
  });

  it('refuses a bad activityFlushMs with a ConfigurationError', () => {
    for (const bad of [-1, 1.5, '10', 3_600_001]) {
      expect(() =>
        createInbox({ store, consumer: 'c', activityFlushMs: bad as unknown as number }),
      ).toThrow(/activityFlushMs must be an integer from 0 to 3600000/);
    }
  });
});

describe('consumer activity timer', () => {
  it('does not keep the process alive', async () => {
    const store = await openTestStore('postgres', { schema: uniqueSchema('act') });
    try {
      const child = spawn(
        process.execPath,
        ['--import', 'tsx', path.join(__dirname, 'fixtures', 'activity-child.ts')],
        {
          cwd: path.resolve(__dirname, '../../..'),
          env: {
            ...process.env,
            ACTIVITY_CHILD_URL: databaseUrl(),
            ACTIVITY_CHILD_SCHEMA: store.schema,
          },
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      const started = Date.now();
      const code = await new Promise<number | null>((resolve, reject) => {
        const timer = setTimeout(() => {
          child.kill('SIGKILL');
          reject(new Error(`the child did not exit on its own: ${stderr}`));
        }, 20_000);
        child.on('exit', (exitCode) => {
          clearTimeout(timer);
          resolve(exitCode);
        });
      });
      expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
      expect(stdout).toContain('ACTIVITY_CHILD processed');
      // Well before the 10-minute flush interval the child had pending.
      expect(Date.now() - started).toBeLessThan(20_000);
    } finally {
      await store.dispose();
    }
  }, 30_000);
});
