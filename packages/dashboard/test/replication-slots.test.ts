/**
 * The overview's replication slots panel in headless Chromium, over a store on the
 * logical-replication PostgreSQL (`LOGICAL_DATABASE_URL`) with real `pgoutput` slots: one
 * idle and nearly caught up, one far behind (marked, with a note), one held by
 * `pg_recvlogical`. On the main server (no logical slots) the panel is not there; a bad
 * `slotLagWarningBytes` is refused.
 */
import { ConfigurationError, createAdmin, createStore, type Store } from '@justonce/core';
import { createDashboard } from '@justonce/dashboard';
import {
  LOGICAL_SETTINGS,
  startPrivatePostgres,
  type PrivatePostgres,
} from '../../../test-support/private-postgres';
import {
  createSlotFixture,
  type SlotFixture,
  type SlotReader,
} from '../../../test-support/replication-slots';
import {
  browserDashboard,
  freshStore,
  operatorPage,
  screenshot,
  type BrowserDashboard,
} from './fixtures';

/** 256 KiB: the far slot's thousands of rows pass it, the near slot's few do not. */
const WARN_BYTES = 256 * 1024;

let server: PrivatePostgres;
let store: Store;
let near: SlotFixture;
let far: SlotFixture;
let busy: SlotFixture;
let reader: SlotReader;
let dashboard: BrowserDashboard;

beforeAll(async () => {
  // A server of its own: on the shared one, other files' WAL would put the slots this test
  // expects to be caught up past the threshold.
  server = await startPrivatePostgres({ settings: LOGICAL_SETTINGS });
  store = await createStore({
    connectionString: server.url,
    schema: `dash_slots_${process.pid}_${Date.now().toString(36)}`,
  });
  await store.migrate();
  far = await createSlotFixture('jo_dash_far', server.url);
  await far.writeWal(4000);
  // A slot is behind by all WAL written after its creation, whatever it reads: `busy` and
  // `near` come after `far`'s WAL, so only `far` passes the threshold.
  busy = await createSlotFixture('jo_dash_busy', server.url);
  near = await createSlotFixture('jo_dash_near', server.url);
  await near.writeWal(10);
  reader = await busy.hold();
  dashboard = await browserDashboard({
    admin: createAdmin(store),
    slotLagWarningBytes: WARN_BYTES,
  });
});

afterAll(async () => {
  await dashboard?.close();
  await reader?.stop();
  for (const fixture of [near, far, busy]) await fixture?.dispose();
  if (store !== undefined) {
    await store.knex.raw(`drop schema if exists ${store.names.schema} cascade`);
    await store.close();
  }
  await server?.dispose();
});

/** The text of each cell of the slot's row, and whether the row is marked. */
async function slotRow(
  page: Awaited<ReturnType<typeof operatorPage>>,
  name: string,
): Promise<{ cells: string[]; marked: boolean }> {
  const row = page.locator(`#replication-slots tr[data-slot="${name}"]`);
  return {
    cells: (await row.locator('td').allInnerTexts()).map((text) => text.trim()),
    marked: ((await row.getAttribute('class')) ?? '').split(' ').includes('warn'),
  };
}

describe('the replication slots panel', () => {
  it('lists each slot with its lag, marking the one behind by the threshold', async () => {
    const page = await operatorPage(dashboard.browser);
    await page.goto(dashboard.url('/'));
    await page.waitForSelector('#replication-slots');
    const heads = await page.locator('#replication-slots th').allInnerTexts();
    expect(heads).toEqual(['Slot', 'Active', 'Lag', 'Lag time', 'Retained WAL', 'WAL status']);

    const farRow = await slotRow(page, far.name);
    expect(farRow.marked).toBe(true);
    expect(farRow.cells[0]).toBe(far.name);
    expect(farRow.cells[1]).toBe('no');
    expect(farRow.cells[2]).toMatch(/^[\d.]+ (KiB|MiB)$/);
    expect(farRow.cells[3]).toBe('—');
    expect(farRow.cells[5]).toBe('reserved');

    const nearRow = await slotRow(page, near.name);
    expect(nearRow.marked).toBe(false);
    expect(nearRow.cells[1]).toBe('no');

    const busyRow = await slotRow(page, busy.name);
    expect(busyRow.cells[1]).toMatch(/^yes \(pid \d+\)$/);
    expect(busyRow.marked).toBe(false);

    const note = await page.locator('#slot-warning').innerText();
    expect(note).toMatch(/^\d+ of \d+ replication slots? (is|are) 256\.0 KiB or more behind/);
    await screenshot(page, 'replication-slots');
    await page.context().close();
  });
});

describe('without logical slots', () => {
  it('the overview has no slots panel on the main server', async () => {
    const t = await freshStore('dash_noslots');
    const plain = createDashboard({ admin: t.admin });
    try {
      const page = await (await plain.fetch(new Request('http://127.0.0.1/'))).text();
      expect(page).toMatch(/Retention backlog/);
      expect(page).not.toMatch(/Replication slots|replication-slots/);
    } finally {
      plain.close();
      await t.close();
    }
  });

  it.each([0, -1, 1.5, Number.NaN, '1024', 2 ** 60])('refuses slotLagWarningBytes %p', (value) => {
    expect(() =>
      createDashboard({ admin: createAdmin(store), slotLagWarningBytes: value as number }),
    ).toThrow(ConfigurationError);
  });
});
