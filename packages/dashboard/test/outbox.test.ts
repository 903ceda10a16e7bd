/**
 * The outbox page in a real browser, with real dead events: events written by the real outbox
 * in a knex transaction, a running relay publishing through core's in-memory publisher whose
 * failure injection (`failKey`, non-retriable) makes the relay mark two of them dead. One
 * carries HTML and script in its payload, a header and its error. The operator sees them listed
 * with their errors, opens one (everything shown as text), requeues it once the failure is
 * gone (published exactly once) and deletes the other; a visitor without the token is refused.
 * Screenshots continue browser.test.ts's numbering in test-output/dashboard/.
 */
import {
  createMemoryPublisher,
  createOutbox,
  createRelay,
  type MemoryPublisher,
  type OutboxEntry,
  type Relay,
} from '@justonce/core';
import type { Page } from 'playwright-core';
import { waitFor } from '../../../test-support/wait-for';
import {
  browserDashboard,
  freshStore,
  logIn,
  operatorPage,
  postFromPage,
  pwned,
  screenshot,
  XSS_BODY as XSS_PAYLOAD,
  XSS_HEADER,
  type BrowserDashboard,
  type TestStore,
} from './fixtures';

const TOKEN = 'operator-token-for-outbox-tests';
const XSS_ERROR = 'broker refused <img src=x onerror="window.__pwned=4">';

let t: TestStore;
let publisher: MemoryPublisher;
let relay: Relay;
let dashboard: BrowserDashboard;
/** Removes the failure rule of the event that gets requeued. */
let healXss: () => void;

const url = (path: string): string => dashboard.url(path);

async function deadEvent(messageId: string): Promise<OutboxEntry> {
  const entry = (await t.admin.outbox.list({ status: 'dead' })).find(
    (e) => e.messageId === messageId,
  );
  if (entry === undefined) throw new Error(`no dead outbox event ${messageId}`);
  return entry;
}

const publishedTimes = (messageId: string): number =>
  publisher.published.filter((m) => m.messageId === messageId).length;

beforeAll(async () => {
  t = await freshStore('dash_outbox');
  publisher = createMemoryPublisher();
  // Non-retriable: the relay marks the event dead on its first failed attempt.
  healXss = publisher.failKey('order-7', { retriable: false, message: XSS_ERROR });
  publisher.failKey('order-9', { retriable: false, message: 'order-9 is unroutable' });
  const outbox = createOutbox({ store: t.store });
  await t.store.knex.transaction(async (trx) => {
    await outbox.add(trx, [
      {
        destination: 'orders',
        key: 'order-7',
        messageId: 'evt-xss',
        headers: { 'x-note': XSS_HEADER },
        payload: XSS_PAYLOAD,
      },
      { destination: 'orders', key: 'order-8', messageId: 'evt-ok', payload: { n: 8 } },
      { destination: 'orders', key: 'order-9', messageId: 'evt-doomed', payload: { n: 9 } },
    ]);
  });
  // Published rows kept, so the requeued event's page can show it published.
  relay = createRelay({ store: t.store, publisher, pollIntervalMs: 100, onPublished: 'keep' });
  await relay.start();
  await waitFor(
    'two dead outbox events and one published',
    async () =>
      publishedTimes('evt-ok') === 1 &&
      (await t.admin.outbox.list({ status: 'dead' })).length === 2,
  );
  dashboard = await browserDashboard({ admin: t.admin, token: TOKEN });
});

afterAll(async () => {
  await dashboard?.close();
  await relay?.stop();
  await publisher?.close();
  await t?.close();
});

describe('a visitor without the token', () => {
  it('sees a dead event with disabled buttons; a requeue or delete POST is refused with 403', async () => {
    const context = await dashboard.browser.newContext();
    context.setDefaultTimeout(10_000);
    try {
      const page = await context.newPage();
      const { id } = await deadEvent('evt-xss');
      await page.goto(url(`/outbox/${id}`));
      await expect(page.locator('button:disabled', { hasText: 'Requeue' }).count()).resolves.toBe(
        1,
      );
      await expect(page.locator('button:disabled', { hasText: 'Delete' }).count()).resolves.toBe(1);
      for (const action of ['requeue', 'delete']) {
        // A form posted from the dashboard's own page (the CSP forbids fetch from it).
        const refused = page.waitForResponse((r) => r.url().endsWith(`/outbox/${id}/${action}`));
        await postFromPage(page, url(`/outbox/${id}/${action}`));
        expect((await refused).status()).toBe(403);
        await expect(page.locator('#error').textContent()).resolves.toMatch(
          /Log in with the operator token first/,
        );
        if (action === 'requeue') await page.goBack();
      }
      await screenshot(page, '10-outbox-visitor-refused');
      expect((await t.admin.outbox.get(id))?.status).toBe('dead');
      expect(publishedTimes('evt-xss')).toBe(0);
    } finally {
      await context.close();
    }
  });
});

describe('an operator on the outbox page', () => {
  let page: Page;

  beforeAll(async () => {
    page = await operatorPage(dashboard.browser);
  });

  it('lists the dead events with their errors, as text', async () => {
    await page.goto(url('/outbox'));
    await expect(
      page.locator('#outbox-status tr', { hasText: 'orders' }).locator('td.n').nth(2).textContent(),
    ).resolves.toBe('2');
    const rows = page.locator('#outbox-events tbody tr');
    await expect(rows.count()).resolves.toBe(2);
    const xss = rows.filter({ hasText: 'evt-xss' });
    await expect(xss.locator('td:nth-child(6)').textContent()).resolves.toBe('dead');
    await expect(xss.locator('td:nth-child(8)').textContent()).resolves.toContain(XSS_ERROR);
    await expect(
      rows.filter({ hasText: 'evt-doomed' }).locator('td:nth-child(8)').textContent(),
    ).resolves.toContain('order-9 is unroutable');
    await expect(page.locator('#outbox-events').textContent()).resolves.not.toContain('evt-ok');
    await expect(page.locator('main img').count()).resolves.toBe(0);
    expect(await pwned(page)).toBeUndefined();
    await screenshot(page, '11-outbox-dead');
  });

  it('opens one: headers, payload and error shown escaped', async () => {
    await page
      .locator('#outbox-events tbody tr', { hasText: 'evt-xss' })
      .locator('td:nth-child(2) a')
      .click();
    await page.waitForURL(/\/outbox\/\d+$/);
    await expect(page.locator('#body').textContent()).resolves.toBe(XSS_PAYLOAD);
    await expect(
      page.locator('#headers tr', { hasText: 'x-note' }).locator('td').textContent(),
    ).resolves.toBe(XSS_HEADER);
    await expect(page.locator('#error-text').textContent()).resolves.toContain(XSS_ERROR);
    await page.hover('#headers');
    expect(await pwned(page)).toBeUndefined();
    await expect(page.locator('main img, main b, main script').count()).resolves.toBe(0);
    await screenshot(page, '12-outbox-event-detail');
  });

  it('requeues it after logging in, once the failure is gone: published exactly once', async () => {
    const dead = await deadEvent('evt-xss');
    await logIn(page, TOKEN);
    await page.waitForURL(new RegExp(`/outbox/${dead.id}\\?done=logged-in`));

    healXss();
    await page.click('form[action$="/requeue"] button');
    await page.waitForURL(/\/outbox\/\d+\?done=requeued/);
    await expect(page.locator('.notice').textContent()).resolves.toBe('Requeued 1 outbox event.');
    await waitFor('the requeued event to be published', () => publishedTimes('evt-xss') >= 1);
    // A few more relay cycles: still once.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(publishedTimes('evt-xss')).toBe(1);
    const [sent] = publisher.published.filter((m) => m.messageId === 'evt-xss');
    expect(sent!.headers['x-note']).toBe(XSS_HEADER);
    expect(Buffer.from(sent!.payload).toString('utf8')).toBe(XSS_PAYLOAD);
    expect(await t.admin.outbox.get(dead.id)).toBeUndefined();

    await page.reload();
    await expect(
      page.locator('#event tr', { hasText: 'Status' }).locator('td').textContent(),
    ).resolves.toBe('published');
    await page.goto(url('/outbox'));
    const rows = page.locator('#outbox-events tbody tr');
    await expect(rows.count()).resolves.toBe(1);
    await expect(page.locator('#outbox-events').textContent()).resolves.not.toContain('evt-xss');
    await screenshot(page, '13-outbox-requeued');
  });

  it('deletes the other dead event', async () => {
    const { id } = await deadEvent('evt-doomed');
    await page.goto(url(`/outbox/${id}`));
    await page.click('form[action$="/delete"] button');
    await page.waitForURL(/\/outbox\?done=deleted/);
    await expect(page.locator('.notice').textContent()).resolves.toBe('Deleted 1 outbox event.');
    await expect(page.locator('#outbox-events').textContent()).resolves.toContain(
      'No dead events.',
    );
    expect(await t.admin.outbox.get(id)).toBeUndefined();
    expect(publishedTimes('evt-doomed')).toBe(0);
    await screenshot(page, '14-outbox-deleted');
  });
});
