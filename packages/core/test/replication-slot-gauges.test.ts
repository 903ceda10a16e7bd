/**
 * `observeReplicationSlots`: the lag of real `pgoutput` slots on the logical-replication
 * PostgreSQL (`LOGICAL_DATABASE_URL`) as OpenTelemetry gauges, collected through the SDK's
 * own meter provider; one slot only when told; the last figures kept when the database cannot
 * be read; nothing on PGlite; bad options refused.
 */
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { ConfigurationError, createStore, observeReplicationSlots, type Store } from '../src';
import { logicalDatabaseUrl } from '../../../test-support/services';
import { createSlotFixture, type SlotFixture } from '../../../test-support/replication-slots';
import { recordingLogger, type LogLine } from '../../../test-support/log-lines';
import { waitFor } from '../../../test-support/wait-for';
import { mysqlUrl } from './db';
import { collect, TestReader } from './fixtures/metric-reader';

/** The points of one slot, by gauge name without the `justonce.replication_slot.` prefix. */
function slotPoints(points: Record<string, number>, slot: string): Record<string, number> {
  const mine: Record<string, number> = {};
  for (const [key, value] of Object.entries(points)) {
    const match = /^justonce\.replication_slot\.(\w+)\{slot=(\w+)\}$/.exec(key);
    if (match !== null && match[2] === slot) mine[match[1]!] = value;
  }
  return mine;
}

describe('observeReplicationSlots (OpenTelemetry gauges)', () => {
  let store: Store;
  let idle: SlotFixture;
  let busy: SlotFixture;
  let provider: MeterProvider;
  let reader: TestReader;

  beforeAll(async () => {
    // The slots are read from the catalog: no justonce table is needed.
    store = await createStore({ connectionString: logicalDatabaseUrl() });
    idle = await createSlotFixture('jo_gauge_idle');
    busy = await createSlotFixture('jo_gauge_busy');
    await idle.writeWal(1000);
  });
  beforeEach(() => {
    reader = new TestReader();
    provider = new MeterProvider({ readers: [reader] });
  });
  afterEach(() => provider.shutdown());
  afterAll(async () => {
    await idle?.dispose();
    await busy?.dispose();
    await store?.close();
  });

  it("reports each slot's lag, retained WAL, activity and loss; seconds only once known", async () => {
    const gauges = observeReplicationSlots({
      store,
      meter: provider.getMeter('test'),
      refreshMs: 0,
    });
    const idlePoints = slotPoints(await collect(reader), idle.name);
    expect(idlePoints).toEqual({
      active: 0,
      lag: expect.any(Number),
      retained_wal: expect.any(Number),
      lost: 0,
    });
    // No lag_time (an inactive slot's is unknown), no safe_wal_size (max_slot_wal_keep_size is
    // unlimited here).
    expect(idlePoints['lag']).toBeGreaterThan(1000 * 200);
    expect(idlePoints['retained_wal']).toBeGreaterThanOrEqual(idlePoints['lag']!);

    const held = await busy.hold();
    try {
      await busy.writeWal(200);
      const busyPoints = await waitFor('a measured lag time', async () => {
        const points = slotPoints(await collect(reader), busy.name);
        return points['lag_time'] === undefined ? undefined : points;
      });
      expect(busyPoints).toMatchObject({ active: 1, lost: 0 });
      expect(busyPoints['lag_time']).toBeGreaterThanOrEqual(0);
    } finally {
      await held.stop();
      gauges.stop();
      gauges.stop();
    }
  });

  it('reports only the slot it is told, reading the database at most once per refreshMs', async () => {
    const gauges = observeReplicationSlots({
      store,
      meter: provider.getMeter('test'),
      slot: idle.name,
      refreshMs: 60_000,
    });
    const first = await collect(reader);
    const names = Object.keys(first).filter((k) => k.startsWith('justonce.replication_slot.'));
    expect(names.length).toBeGreaterThan(0);
    for (const name of names) expect(name).toMatch(new RegExp(`\\{slot=${idle.name}\\}$`));
    // More WAL, but refreshMs has not passed: the same figures.
    await idle.writeWal(100);
    expect(await collect(reader)).toEqual(first);
    gauges.stop();
  });

  it('keeps the last figures when the database cannot be read, logs it, never throws into the SDK', async () => {
    const lines: LogLine[] = [];
    const logger = recordingLogger(lines);
    const closing = await createStore({ connectionString: logicalDatabaseUrl() });
    const gauges = observeReplicationSlots({
      store: closing,
      meter: provider.getMeter('test'),
      slot: idle.name,
      refreshMs: 0,
      logger,
    });
    const before = await collect(reader);
    expect(slotPoints(before, idle.name)['active']).toBe(0);
    await closing.close();
    expect(await collect(reader)).toEqual(before);
    expect(lines.map((line) => [line.level, line.message])).toEqual([
      ['warn', 'replication slot gauges: reading the slots failed; last values kept'],
    ]);
    gauges.stop();
  });

  it('reports nothing on MySQL, which has no slots (nor has PGlite: the same path)', async () => {
    // Not migrated: the slots are never read from a table.
    const mysql = await createStore({ connectionString: mysqlUrl() });
    try {
      const gauges = observeReplicationSlots({ store: mysql, meter: provider.getMeter('test') });
      const points = await collect(reader);
      expect(Object.keys(points).filter((k) => k.startsWith('justonce.replication_slot.'))).toEqual(
        [],
      );
      gauges.stop();
    } finally {
      await mysql.close();
    }
  });

  it('refuses bad options', () => {
    expect(() => observeReplicationSlots({ store, refreshMs: -1 })).toThrow(ConfigurationError);
    expect(() => observeReplicationSlots({ store, slot: 'Not-A-Slot' })).toThrow(
      /replication slot name is 1-63 characters/,
    );
    expect(() => observeReplicationSlots({ store, refresh: 1 } as never)).toThrow(
      /unknown option `refresh`; did you mean `refreshMs`\?/,
    );
    expect(() => observeReplicationSlots({} as never)).toThrow(/needs a store/);
    expect(() => observeReplicationSlots(undefined as never)).toThrow(ConfigurationError);
    expect(() => observeReplicationSlots({ store, meter: {} as never })).toThrow(
      ConfigurationError,
    );
  });
});
