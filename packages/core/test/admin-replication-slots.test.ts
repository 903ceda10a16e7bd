/**
 * `admin.replicationSlots()`, `status().slots` and `admin.dropReplicationSlot()` on the
 * logical-replication PostgreSQL (`LOGICAL_DATABASE_URL`): a real `pgoutput` slot made to lag
 * by inserts, held active by `pg_recvlogical`, refused while active and dropped once released;
 * slots of another database and physical slots out of reach. On the main server
 * (`wal_level=replica`), PGlite and MySQL the list is empty and the status still reads.
 */
import fc from 'fast-check';
import { Client } from 'pg';
import { ConfigurationError, createAdmin, createStore, hasErrorCode, type Store } from '../src';
import {
  ReplicationSlotActiveError,
  ReplicationSlotNotFoundError,
  type Admin,
  type ReplicationSlotStatus,
} from '../src/admin';
import { logicalDatabaseUrl } from '../../../test-support/services';
import {
  createSlotFixture,
  uniqueSlotName,
  type SlotFixture,
} from '../../../test-support/replication-slots';
import { recordingLogger, type LogLine } from '../../../test-support/log-lines';
import { waitFor } from '../../../test-support/wait-for';
import { ALL_STORE_KINDS, openTestStore, uniqueSchema } from './db';

const LSN = /^[0-9A-F]+\/[0-9A-F]+$/;

async function slotNamed(admin: Admin, name: string): Promise<ReplicationSlotStatus | undefined> {
  return (await admin.replicationSlots()).find((slot) => slot.name === name);
}

describe('replication slots on the logical-replication server', () => {
  let store: Store;
  let admin: Admin;
  const audit: LogLine[] = [];
  const fixtures: SlotFixture[] = [];

  async function slot(prefix: string): Promise<SlotFixture> {
    const fixture = await createSlotFixture(prefix);
    fixtures.push(fixture);
    return fixture;
  }

  beforeAll(async () => {
    store = await createStore({
      connectionString: logicalDatabaseUrl(),
      schema: uniqueSchema('slots'),
    });
    await store.migrate();
    admin = createAdmin(store, { logger: recordingLogger(audit) });
  });

  afterAll(async () => {
    for (const fixture of fixtures) await fixture.dispose();
    if (store !== undefined) {
      await store.knex.raw(`drop schema if exists ${store.names.schema} cascade`);
      await store.close();
    }
  });

  it('lists an inactive slot with the WAL it has not confirmed and the WAL it keeps', async () => {
    const fixture = await slot('jo_slot_idle');
    await fixture.writeWal(2000);
    const listed = await slotNamed(admin, fixture.name);
    expect(listed).toMatchObject({
      name: fixture.name,
      plugin: 'pgoutput',
      active: false,
      activePid: null,
      walStatus: 'reserved',
      // max_slot_wal_keep_size is unlimited on the test server.
      safeWalSizeBytes: null,
      // Inactive: PostgreSQL cannot tell how far behind in time; 15 does not record since when.
      lagSeconds: null,
      inactiveSince: null,
    });
    expect(listed!.restartLsn).toMatch(LSN);
    expect(listed!.confirmedFlushLsn).toMatch(LSN);
    // 2000 rows of 200 bytes, and their index entries, are in the WAL since the slot's start.
    expect(listed!.lagBytes).toBeGreaterThan(2000 * 200);
    expect(listed!.retainedBytes).toBeGreaterThanOrEqual(listed!.lagBytes!);

    const status = await admin.status();
    expect(status.slots.map((s) => s.name)).toContain(fixture.name);
    expect(status.slots.find((s) => s.name === fixture.name)).toMatchObject({ active: false });
    // By name, as PostgreSQL sorts them.
    const names = status.slots.map((s) => s.name);
    expect(names).toEqual([...names].sort());
  });

  it('an active slot: its reader, its lag in seconds, a drop refused until it is released', async () => {
    const fixture = await slot('jo_slot_busy');
    await fixture.writeWal(500);
    const reader = await fixture.hold();
    const active = await slotNamed(admin, fixture.name);
    expect(active).toMatchObject({ active: true, activePid: expect.any(Number) });
    // pg_recvlogical confirms every second: the walsender measures the time it took.
    await fixture.writeWal(500);
    const measured = await waitFor('a lag in seconds', async () => {
      const s = await slotNamed(admin, fixture.name);
      return s?.lagSeconds !== null ? s : undefined;
    });
    expect(measured.lagSeconds).toBeGreaterThanOrEqual(0);
    // Caught up, it lags by nothing, in bytes and in seconds.
    const caughtUp = await waitFor('the reader caught up', async () => {
      const s = await slotNamed(admin, fixture.name);
      return s?.lagBytes === 0 ? s : undefined;
    });
    expect(caughtUp.lagSeconds).toBe(0);

    const refused = await admin.dropReplicationSlot(fixture.name).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ReplicationSlotActiveError);
    expect(refused).toMatchObject({
      code: 'REPLICATION_SLOT_ACTIVE',
      retriable: false,
      details: { slot: fixture.name, pid: active!.activePid },
    });
    expect(await fixture.exists()).toBe(true);
    expect(audit.filter((line) => line.fields['slot'] === fixture.name)).toEqual([]);

    await reader.stop();
    expect(await slotNamed(admin, fixture.name)).toMatchObject({ active: false, activePid: null });
    await admin.dropReplicationSlot(fixture.name);
    expect(await fixture.exists()).toBe(false);
    expect(await slotNamed(admin, fixture.name)).toBeUndefined();
    expect(audit.filter((line) => line.fields['slot'] === fixture.name)).toEqual([
      expect.objectContaining({
        level: 'info',
        message: 'admin: replication slot dropped',
        fields: { slot: fixture.name },
      }),
    ]);
    const again = await admin.dropReplicationSlot(fixture.name).catch((e: unknown) => e);
    expect(again).toBeInstanceOf(ReplicationSlotNotFoundError);
    expect(again).toMatchObject({
      code: 'REPLICATION_SLOT_NOT_FOUND',
      message: `no logical replication slot ${fixture.name} in database ${new URL(fixture.url).pathname.slice(1)}`,
    });
  });

  it("neither lists nor drops another database's logical slot or a physical slot", async () => {
    const other = new URL(logicalDatabaseUrl());
    other.pathname = '/postgres';
    const client = new Client({ connectionString: other.toString() });
    await client.connect();
    const elsewhere = uniqueSlotName('jo_slot_otherdb');
    const physical = uniqueSlotName('jo_slot_physical');
    try {
      await client.query(`select pg_create_logical_replication_slot($1, 'pgoutput')`, [elsewhere]);
      await client.query('select pg_create_physical_replication_slot($1)', [physical]);
      const names = (await admin.replicationSlots()).map((s) => s.name);
      expect(names).not.toContain(elsewhere);
      expect(names).not.toContain(physical);
      for (const name of [elsewhere, physical]) {
        await expect(admin.dropReplicationSlot(name)).rejects.toBeInstanceOf(
          ReplicationSlotNotFoundError,
        );
      }
      const left = await client.query(
        'select count(*)::int as n from pg_replication_slots where slot_name = any($1)',
        [[elsewhere, physical]],
      );
      expect(left.rows[0].n).toBe(2);
    } finally {
      await client.query(
        'select pg_drop_replication_slot(slot_name) from pg_replication_slots where slot_name = any($1)',
        [[elsewhere, physical]],
      );
      await client.end();
    }
  });

  it('refuses a name PostgreSQL cannot have before any SQL; a valid absent one is not found', async () => {
    const valid = /^[a-z0-9_]{1,63}$/;
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.string({ maxLength: 70 }),
          fc.stringMatching(/^[a-z0-9_]{60,66}$/),
          fc.constantFrom('', 'A', 'slot-1', 'slot 1', 'é', 'a'.repeat(64), "x'; drop table t"),
        ),
        async (name) => {
          const error = await admin.dropReplicationSlot(name).catch((e: unknown) => e);
          if (valid.test(name)) {
            expect(hasErrorCode(error, 'REPLICATION_SLOT_NOT_FOUND')).toBe(true);
          } else {
            expect(error).toBeInstanceOf(ConfigurationError);
          }
        },
      ),
      { numRuns: 60 },
    );
    await expect(admin.dropReplicationSlot(42 as unknown as string)).rejects.toBeInstanceOf(
      ConfigurationError,
    );
  });
});

describe.each(ALL_STORE_KINDS)('replication slots on %s: none', (kind) => {
  let store: Awaited<ReturnType<typeof openTestStore>>;
  let admin: Admin;

  beforeAll(async () => {
    store = await openTestStore(kind);
    admin = createAdmin(store);
  });
  afterAll(() => store.dispose());

  it('lists none, the status reads with an empty slots section, a drop finds nothing', async () => {
    expect(await admin.replicationSlots()).toEqual([]);
    const status = await admin.status();
    expect(status.slots).toEqual([]);
    const name = uniqueSlotName('jo_none');
    const error = await admin.dropReplicationSlot(name).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ReplicationSlotNotFoundError);
    expect((error as Error).message).toMatch(
      kind === 'postgres'
        ? new RegExp(`^no logical replication slot ${name} in database \\w+$`)
        : /has no replication slots/,
    );
  });
});
