/**
 * A fault of the store is never the message's: when the handler's writes (or the inbox's
 * own statements) meet disk full, an I/O error, a shutdown or a read-only standby, the
 * delivery is not charged an attempt, nothing is dead-lettered and `process` throws a typed,
 * retriable error, however many deliveries the outage lasts. The faults are raised by the
 * real server (a trigger with the SQLSTATE PostgreSQL gives them), on both backends.
 */
import {
  createDeadLetters,
  createInbox,
  hasErrorCode,
  rowsOf,
  type Envelope,
  type HandlerContext,
  type Store,
} from '../src';
import { ALL_STORE_KINDS, openTestStore } from './db';
import { freshId, recordingLogger, recordingMeter } from './fixtures/inbox-support';
import {
  countEffects,
  createEffectsTable,
  effectsTable,
  writeEffect,
} from '../../../test-support/effects';

/**
 * The MySQL error number each simulated SQLSTATE stands for: a trigger's `signal` sets it, and
 * mysql2 names the error by it (ER_DISK_FULL, ER_OUT_OF_RESOURCES, ER_SERVER_SHUTDOWN,
 * ER_OPTION_PREVENTS_STATEMENT for a read-only server, ER_LOCK_DEADLOCK, ER_LOCK_WAIT_TIMEOUT).
 */
const MYSQL_ERRNO: Readonly<Record<string, number>> = {
  '53100': 1021,
  '58030': 1041,
  '57P01': 1053,
  '25006': 1290,
  '40P01': 1213,
  '40001': 1205,
};

/** A trigger that fails every insert into `table` with `sqlstate` (MySQL: its errno). */
async function failInserts(
  store: Store,
  name: string,
  table: string,
  sqlstate: string,
): Promise<{ heal(): Promise<void> }> {
  await store.knex.raw(
    `create trigger ${store.names.schema}.${name} before insert on ${table} for each row
     signal sqlstate 'HY000'
       set mysql_errno = ${MYSQL_ERRNO[sqlstate]}, message_text = 'simulated fault'`,
  );
  return {
    heal: async () => {
      await store.knex.raw(`drop trigger ${store.names.schema}.${name}`);
    },
  };
}

/** Makes every insert into the effects table fail with `sqlstate` until `heal`. */
async function breakEffects(store: Store, sqlstate: string): Promise<{ heal(): Promise<void> }> {
  if (store.dialect === 'mysql') {
    return failInserts(store, 'fail_effects', effectsTable(store), sqlstate);
  }
  const fn = `${store.names.schema}."fail_effects"`;
  await store.knex.raw(
    `create or replace function ${fn}() returns trigger language plpgsql as $$
     begin raise exception 'simulated fault' using errcode = '${sqlstate}'; end $$`,
  );
  await store.knex.raw(
    `create trigger fail_effects before insert on ${effectsTable(store)}
     for each row execute function ${fn}()`,
  );
  return {
    heal: async () => {
      await store.knex.raw(`drop trigger fail_effects on ${effectsTable(store)}`);
    },
  };
}

async function attemptsOf(store: Store, consumer: string): Promise<number[]> {
  const result = await store.knex.raw(
    `select attempts from ${store.names.table('inbox_attempts')} where consumer = ?`,
    [consumer],
  );
  return rowsOf<{ attempts: number }>(result).map((r) => Number(r.attempts));
}

describe.each(ALL_STORE_KINDS)('inbox during a store outage on %s', (kind) => {
  let store: Store & { dispose(): Promise<void> };
  beforeAll(async () => {
    store = await openTestStore(kind);
    await createEffectsTable(store);
  });
  afterAll(async () => {
    await store.dispose();
  });

  /** Makes every claim (insert of a dedup record) fail with `sqlstate` until `heal`. */
  async function failClaims(records: string, sqlstate: string) {
    if (kind === 'mysql') return failInserts(store, 'fail_claims', records, sqlstate);
    const fn = `${store.names.schema}."fail_claims"`;
    await store.knex.raw(
      `create or replace function ${fn}() returns trigger language plpgsql as $$
       begin raise exception 'simulated collision' using errcode = '${sqlstate}'; end $$`,
    );
    await store.knex.raw(
      `create trigger fail_claims before insert on ${records} for each row execute function ${fn}()`,
    );
    return {
      heal: async () => {
        await store.knex.raw(`drop trigger fail_claims on ${records}`);
      },
    };
  }

  const handler = async (ctx: HandlerContext) => {
    await writeEffect(ctx.trx, store, ctx.messageId, { scope: ctx.scope });
  };
  const envelope = (id: string, receiveCount?: number): Envelope => ({
    id,
    headers: {},
    body: 'x',
    delivery: receiveCount === undefined ? {} : { receiveCount },
  });

  it.each([
    ['disk full', '53100'],
    ['an I/O error', '58030'],
    ['a server shutting down', '57P01'],
    ['a read-only standby after failover', '25006'],
  ])(
    '%s outlasting maxAttempts deliveries charges nothing and dead-letters nothing',
    async (_label, sqlstate) => {
      const consumer = freshId('outage');
      const { logger, lines } = recordingLogger();
      const { meter, points } = recordingMeter();
      const inbox = createInbox({ store, consumer, maxAttempts: 3, logger, meter });
      const id = freshId();
      const fault = await breakEffects(store, sqlstate);
      try {
        for (let delivery = 0; delivery < 6; delivery += 1) {
          const error = await inbox.process(envelope(id), handler).catch((e: unknown) => e);
          expect(hasErrorCode(error, 'STORE_UNAVAILABLE')).toBe(true);
          expect((error as { retriable: boolean }).retriable).toBe(true);
        }
        expect(Math.max(0, ...(await attemptsOf(store, consumer)))).toBe(0);
      } finally {
        await fault.heal();
      }
      const outcome = await inbox.process(envelope(id), handler);
      expect(outcome).toMatchObject({ status: 'processed', attempt: 1 });
      expect(await countEffects(store, id)).toBe(1);
      expect(await createDeadLetters(store).list({ consumer })).toHaveLength(0);
      expect(lines.filter((l) => /store failed/.test(l.message))).toHaveLength(6);
      expect(
        points.filter((p) => p.instrument === 'justonce.inbox.store_unavailable'),
      ).toHaveLength(6);
    },
  );

  // A deadlock or serialization failure of the inbox's own claim is a collision with other
  // transactions, not the message's fault; in the handler's own statements it is the
  // handler's failure, charged, so that one that deadlocks every time runs out of attempts.
  it.each([
    ['a deadlock', '40P01'],
    ['a serialization failure', '40001'],
  ])(
    "%s of the inbox's own claim charges nothing; in the handler it is charged",
    async (_l, sqlstate) => {
      const consumer = freshId('contention');
      const inbox = createInbox({ store, consumer, maxAttempts: 2 });
      const records = store.names.table('inbox_records');
      const claims = await failClaims(records, sqlstate);
      const id = freshId();
      try {
        for (let delivery = 0; delivery < 3; delivery += 1) {
          const error = await inbox.process(envelope(id), handler).catch((e: unknown) => e);
          expect(hasErrorCode(error, 'STORE_UNAVAILABLE')).toBe(true);
        }
        expect(Math.max(0, ...(await attemptsOf(store, consumer)))).toBe(0);
      } finally {
        await claims.heal();
      }
      const fault = await breakEffects(store, sqlstate);
      try {
        expect((await inbox.process(envelope(id), handler)).status).toBe('failed');
        expect((await inbox.process(envelope(id), handler)).status).toBe('dead-lettered');
      } finally {
        await fault.heal();
      }
    },
  );

  it('in batch mode, no message of the batch is charged or dead-lettered', async () => {
    const consumer = freshId('outage-batch');
    const inbox = createInbox({ store, consumer, maxAttempts: 2 });
    const ids = [freshId(), freshId(), freshId()];
    const fault = await breakEffects(store, '53100');
    try {
      for (let delivery = 0; delivery < 4; delivery += 1) {
        const error = await inbox
          .processBatch(
            ids.map((id) => envelope(id)),
            handler,
          )
          .catch((e: unknown) => e);
        expect(hasErrorCode(error, 'STORE_UNAVAILABLE')).toBe(true);
      }
    } finally {
      await fault.heal();
    }
    const outcomes = await inbox.processBatch(
      ids.map((id) => envelope(id)),
      handler,
    );
    expect(outcomes.map((o) => o.status)).toEqual(['processed', 'processed', 'processed']);
    for (const id of ids) expect(await countEffects(store, id)).toBe(1);
    expect(await createDeadLetters(store).list({ consumer })).toHaveLength(0);
  });

  it("the classify option can name a dependency's error as infrastructure", async () => {
    const consumer = freshId('outage-classify');
    class PaymentsDown extends Error {}
    const inbox = createInbox({
      store,
      consumer,
      maxAttempts: 2,
      classify: (error) => (error instanceof PaymentsDown ? 'infrastructure' : undefined),
    });
    const id = freshId();
    for (let delivery = 0; delivery < 4; delivery += 1) {
      const error = await inbox
        .process(envelope(id), async () => {
          throw new PaymentsDown('the payment provider is down');
        })
        .catch((e: unknown) => e);
      expect(hasErrorCode(error, 'STORE_UNAVAILABLE')).toBe(true);
    }
    expect((await inbox.process(envelope(id), handler)).status).toBe('processed');
    expect(await createDeadLetters(store).list({ consumer })).toHaveLength(0);
  });

  it('an ordinary handler error is still charged and dead-lettered after maxAttempts', async () => {
    const consumer = freshId('not-outage');
    const inbox = createInbox({ store, consumer, maxAttempts: 2 });
    const id = freshId();
    const failing = async () => {
      throw new Error('bad order');
    };
    expect((await inbox.process(envelope(id), failing)).status).toBe('failed');
    expect((await inbox.process(envelope(id), failing)).status).toBe('dead-lettered');
  });
});
