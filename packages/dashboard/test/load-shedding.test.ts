/**
 * The overview's load shedding panel in headless Chromium, fed by a real consumer: a
 * memory-broker consumer with a real inbox on PostgreSQL and `resilience` set, whose failing
 * handler opens its breaker. The open breaker's row is marked; once its report is old it
 * reads stale; a store where no consumer reported has no panel.
 */
import { createDashboard } from '@justonce/dashboard';
import { openBreaker, type OpenBreaker } from '../../../test-support/open-breaker';
import {
  browserDashboard,
  freshStore,
  operatorPage,
  screenshot,
  type BrowserDashboard,
  type TestStore,
} from './fixtures';

let t: TestStore;
let shedding: OpenBreaker;
let dashboard: BrowserDashboard;

beforeAll(async () => {
  t = await freshStore('dash_shed');
  shedding = await openBreaker(t.store, 'payments');
  dashboard = await browserDashboard({ admin: t.admin });
});

afterAll(async () => {
  await dashboard?.close();
  await shedding?.stop();
  await t?.close();
});

/** The text of each cell of the consumer's rows, and whether the first is marked. */
async function rowOf(
  page: Awaited<ReturnType<typeof operatorPage>>,
  consumer: string,
): Promise<{ cells: string[]; marked: boolean }> {
  const row = page.locator(`#load-shedding tr[data-consumer="${consumer}"]`).first();
  return {
    cells: (await row.locator('td').allInnerTexts()).map((text) => text.trim()),
    marked: ((await row.getAttribute('class')) ?? '').split(' ').includes('warn'),
  };
}

describe('the load shedding panel', () => {
  it("shows the open breaker, marked, with the budget's figures and the sheds", async () => {
    const page = await operatorPage(dashboard.browser);
    await page.goto(dashboard.url('/'));
    await page.waitForSelector('#load-shedding');
    const heads = await page.locator('#load-shedding th').allInnerTexts();
    expect(heads).toEqual(['Consumer', 'Breaker key', 'State', 'For', 'Retry budget', 'Shed']);
    const row = await rowOf(page, 'payments');
    expect(row.marked).toBe(true);
    expect(row.cells[0]).toBe('payments');
    expect(row.cells[1]).toBe('*');
    expect(row.cells[2]).toBe('open');
    expect(row.cells[3]).toMatch(/^\d+ s$/);
    expect(row.cells[4]).toMatch(/^\d+ spent, \d+ left \(10 s window\)$/);
    expect(row.cells[5]).toMatch(/^\d+ \(breaker \d+, budget 0\)$/);
    await screenshot(page, 'load-shedding');
    await page.context().close();
  });

  it('a consumer that stopped reporting reads stale', async () => {
    await shedding.stop();
    await t.store.knex.raw(
      `update ${t.store.names.table('consumer_resilience')}
          set reported_at = reported_at - interval '2 minutes'`,
    );
    const page = await operatorPage(dashboard.browser);
    await page.goto(dashboard.url('/'));
    const row = await rowOf(page, 'payments');
    expect(row.cells[2]).toMatch(/^open \(stale: last report 2 m \d+ s ago\)$/);
    await page.context().close();
  });

  it('no panel when no consumer reported', async () => {
    const empty = await freshStore('dash_noshed');
    const plain = createDashboard({ admin: empty.admin });
    try {
      const page = await (await plain.fetch(new Request('http://127.0.0.1/'))).text();
      expect(page).toMatch(/Retention backlog/);
      expect(page).not.toMatch(/Load shedding|load-shedding/);
    } finally {
      plain.close();
      await empty.close();
    }
  });
});
