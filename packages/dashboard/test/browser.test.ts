/**
 * The dashboard in a real browser: headless Chromium (Debian's package, driven by
 * playwright-core) against `serveDashboard` over a real PostgreSQL store in a fresh schema,
 * with a running relay and running consumers on the in-memory broker of @justonce/core's test
 * kit. Dead letters come from real handler failures; one carries HTML and script in its body
 * and headers. Screenshots go to test-output/dashboard/ at the repository root.
 */
import {
  createInbox,
  createOperations,
  createOutbox,
  createRelay,
  rowsOf,
  type Handler,
  type Relay,
} from '@justonce/core';
import { createMemoryBroker, type MemoryBroker, type MemoryConsumer } from '@justonce/core/testing';
import type { Page } from 'playwright-core';
import { waitFor } from '../../../test-support/wait-for';
import {
  browserDashboard,
  freshStore,
  listen,
  logIn,
  operatorPage,
  postFromPage,
  pwned,
  screenshot,
  XSS_BODY,
  XSS_HEADER,
  type BrowserDashboard,
  type TestStore,
} from './fixtures';

const TOKEN = 'operator-token-for-browser-tests';

let t: TestStore;
let broker: MemoryBroker;
let consumers: MemoryConsumer[];
let relay: Relay;
let dashboard: BrowserDashboard;
/** Message ids a payments delivery has already failed once for. */
const failedOnce = new Set<string>();

async function effects(messageId: string): Promise<number> {
  const result = await t.store.knex.raw(
    `select count(*)::int as n from ${t.store.names.schema}.effects where message_id = ?`,
    [messageId],
  );
  return rowsOf<{ n: number }>(result)[0]!.n;
}

async function letterId(consumer: string, messageId: string): Promise<string> {
  const letters = await t.admin.deadLetters.list({ consumer });
  const letter = letters.find((l) => l.messageId === messageId);
  if (letter === undefined) throw new Error(`no dead letter of ${consumer} for ${messageId}`);
  return letter.id;
}

beforeAll(async () => {
  t = await freshStore('dash_browser');
  await t.store.knex.raw(
    `create table ${t.store.names.schema}.effects (message_id text not null, handled_at timestamptz not null default now())`,
  );
  broker = createMemoryBroker();
  // Payments fail a message the first time (non-retriable: dead-lettered at once), then work.
  const payments: Handler = async ({ trx, messageId }) => {
    if (!failedOnce.has(messageId)) {
      failedOnce.add(messageId);
      throw new Error(`card declined for ${messageId}`);
    }
    await trx.raw(`insert into ${t.store.names.schema}.effects (message_id) values (?)`, [
      messageId,
    ]);
    return 'charged';
  };
  const emails: Handler = async () => {
    throw new Error('mailbox unavailable');
  };
  const classify = (): 'non-retriable' => 'non-retriable';
  consumers = [
    broker.consume('payments', {
      inbox: createInbox({ store: t.store, consumer: 'payments', classify }),
      handler: payments,
    }),
    broker.consume('emails', {
      inbox: createInbox({ store: t.store, consumer: 'emails', classify }),
      handler: emails,
    }),
  ];
  for (const consumer of consumers) await consumer.start();
  const outbox = createOutbox({ store: t.store });
  relay = createRelay({ store: t.store, publisher: broker.publisher(), pollIntervalMs: 100 });
  await relay.start();

  await t.store.knex.transaction(async (trx) => {
    await outbox.add(trx, [
      { destination: 'payments', payload: { amount: 12 }, messageId: 'pay-2' },
      { destination: 'payments', payload: { amount: 30 }, messageId: 'pay-3' },
      { destination: 'emails', payload: { to: 'a@example.com' }, messageId: 'mail-1' },
      { destination: 'emails', payload: { to: 'b@example.com' }, messageId: 'mail-2' },
      { destination: 'emails', payload: { to: 'c@example.com' }, messageId: 'mail-3' },
    ]);
  });
  broker.send('payments', { id: 'xss-1', body: XSS_BODY, headers: { 'x-note': XSS_HEADER } });
  await waitFor('six dead letters', async () => {
    const status = await t.admin.status();
    return status.deadLetters.reduce((n, d) => n + d.count, 0) === 6;
  });
  // One operation stuck past its lease, as if its owner died.
  await createOperations({ store: t.store, operation: 'charge-card', leaseMs: 500 }).reserve(
    'k-stuck',
    { amount: 5 },
  );
  await new Promise((resolve) => setTimeout(resolve, 700));

  dashboard = await browserDashboard({ admin: t.admin, token: TOKEN, sampleEveryMs: 200 });
});

afterAll(async () => {
  await dashboard?.close();
  await relay?.stop();
  for (const consumer of consumers ?? []) await consumer.stop({ drain: true });
  await broker?.close();
  await t?.close();
});

describe('an operator in the browser', () => {
  let page: Page;

  beforeAll(async () => {
    page = await operatorPage(dashboard.browser);
  });

  it('sees the figures on the overview, with security headers', async () => {
    const response = await page.goto(dashboard.url('/'));
    expect(response?.status()).toBe(200);
    const headers = response!.headers();
    expect(headers['content-security-policy']).toMatch(/script-src 'nonce-[A-Za-z0-9+/=]+'/);
    expect(headers['x-frame-options']).toBe('DENY');
    expect(headers['cache-control']).toBe('no-store');
    const deadLetters = page.locator('#dead-letter-status');
    await expect(
      deadLetters.locator('tr', { hasText: 'payments' }).locator('td.n').textContent(),
    ).resolves.toBe('3');
    await expect(
      deadLetters.locator('tr', { hasText: 'emails' }).locator('td.n').textContent(),
    ).resolves.toBe('3');
    await expect(
      page
        .locator('#operation-status tr', { hasText: 'charge-card' })
        .locator('td.n')
        .nth(1)
        .textContent(),
    ).resolves.toBe('1');
    await expect(page.locator('figure.chart polyline').count()).resolves.toBe(3);
    await expect(page.locator('#chart-range').textContent()).resolves.toMatch(/^since /);
    await screenshot(page, '01-overview');
  });

  it('filters dead letters by consumer and opens one: HTML in the message shows as text', async () => {
    await page.goto(dashboard.url('/dead-letters'));
    await expect(page.locator('#dead-letters tbody tr').count()).resolves.toBe(6);
    await page.fill('#filters input[name="consumer"]', 'payments');
    await page.click('#filters button[type="submit"]');
    await page.waitForURL(/consumer=payments/);
    const rows = page.locator('#dead-letters tbody tr');
    await expect(rows.count()).resolves.toBe(3);
    for (const consumer of await rows.locator('td:nth-child(3)').allTextContents())
      expect(consumer).toBe('payments');
    await screenshot(page, '02-dead-letters-filtered');

    await rows.filter({ hasText: 'xss-1' }).locator('td:nth-child(2) a').click();
    await page.waitForURL(/\/dead-letters\/\d+$/);
    await expect(page.locator('#body').textContent()).resolves.toBe(XSS_BODY);
    await expect(page.locator('#headers').textContent()).resolves.toContain(XSS_HEADER);
    await expect(page.locator('#error-text').textContent()).resolves.toContain(
      'card declined for xss-1',
    );
    await page.hover('#headers');
    expect(await pwned(page)).toBeUndefined();
    await expect(page.locator('main img').count()).resolves.toBe(0);
    // Not logged in: the buttons are there, disabled.
    await expect(page.locator('button:disabled', { hasText: 'Requeue' }).count()).resolves.toBe(1);
    await screenshot(page, '03-dead-letter-detail');
  });

  it('logs in with the token: an HttpOnly, SameSite=Strict cookie without the token', async () => {
    await logIn(page, TOKEN);
    await page.waitForURL(/\/dead-letters\/\d+\?done=logged-in/);
    await expect(page.locator('.notice').textContent()).resolves.toBe('Logged in.');
    const cookie = (await page.context().cookies()).find((c) => c.name === 'justonce_dashboard');
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: 'Strict' });
    expect(cookie!.value).not.toContain(TOKEN);
    await screenshot(page, '04-logged-in');
  });

  it('requeues the letter: the running consumer handles it exactly once', async () => {
    const id = await letterId('payments', 'xss-1');
    expect(await effects('xss-1')).toBe(0);
    await page.click('form[action$="/requeue"] button');
    await page.waitForURL(/done=requeued/);
    await expect(page.locator('.notice').textContent()).resolves.toBe('Requeued 1 dead letter.');
    await waitFor('the requeued payment to be handled', async () => (await effects('xss-1')) === 1);
    await broker.whenIdle();
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(await effects('xss-1')).toBe(1);
    expect((await t.admin.deadLetters.get(id))?.requeuedAt).toBeInstanceOf(Date);
    await page.reload();
    await screenshot(page, '05-requeued');
  });

  it('bulk-selects and deletes the letters of a consumer', async () => {
    await page.goto(dashboard.url('/dead-letters?consumer=emails'));
    await expect(page.locator('#dead-letters tbody tr').count()).resolves.toBe(3);
    await page.check('input[data-select-all]');
    await page.click('button[value="delete"]');
    await page.waitForURL(/done=deleted/);
    await expect(page.locator('.notice').textContent()).resolves.toBe('Deleted 3 dead letters.');
    await expect(page.locator('#dead-letters').textContent()).resolves.toContain(
      'No dead letters match.',
    );
    expect(await t.admin.deadLetters.list({ consumer: 'emails' })).toHaveLength(0);
    await screenshot(page, '06-bulk-deleted');
  });

  it('releases an operation stuck past its lease', async () => {
    await page.goto(dashboard.url('/operations'));
    const row = page.locator('#operations tr[data-key="k-stuck"]');
    await expect(row.textContent()).resolves.toContain('past lease');
    await row.locator('button', { hasText: 'Release' }).click();
    await page.waitForURL(/done=released/);
    await expect(page.locator('.notice').textContent()).resolves.toBe('Released 1 record.');
    const record = await t.admin.operations.get({ operation: 'charge-card', key: 'k-stuck' });
    expect(record?.status).toBe('FAILED_RETRIABLE');
    await screenshot(page, '07-operation-released');
  });

  it('refuses a cross-site form post, even with the session cookie', async () => {
    const id = await letterId('payments', 'pay-2');
    const evil = await listen((_req, res) => {
      res.setHeader('content-type', 'text/html');
      res.end(`<form id="f" method="post" action="${dashboard.url(`/dead-letters/${id}/requeue`)}">
        <input name="_csrf" value="guessed"></form><script>document.getElementById('f').submit()</script>`);
    });
    try {
      const refused = page.waitForResponse((r) => r.url().endsWith(`/dead-letters/${id}/requeue`));
      await page.goto(evil.origin);
      const response = await refused;
      expect(response.status()).toBe(403);
      await page.waitForURL(/\/requeue$/);
      await expect(page.locator('#error').textContent()).resolves.toMatch(
        /did not come from this dashboard/,
      );
      await screenshot(page, '08-cross-site-refused');
    } finally {
      await evil.close();
    }
    expect((await t.admin.deadLetters.get(id))?.requeuedAt).toBeNull();
  });
});

describe('a visitor without the token', () => {
  it('sees disabled buttons, and a POST is refused with 403', async () => {
    const context = await dashboard.browser.newContext();
    try {
      const page = await context.newPage();
      const id = await letterId('payments', 'pay-3');
      await page.goto(dashboard.url(`/dead-letters/${id}`));
      await expect(page.locator('button:disabled', { hasText: 'Requeue' }).count()).resolves.toBe(
        1,
      );
      await expect(page.locator('.warn').textContent()).resolves.toMatch(/Log in/);
      // A form posted from the dashboard's own page (the CSP forbids fetch from it).
      const refused = page.waitForResponse((r) => r.url().endsWith(`/dead-letters/${id}/requeue`));
      await postFromPage(page, dashboard.url(`/dead-letters/${id}/requeue`));
      expect((await refused).status()).toBe(403);
      await expect(page.locator('#error').textContent()).resolves.toMatch(
        /Log in with the operator token first/,
      );
      await screenshot(page, '09-visitor-read-only');
      expect((await t.admin.deadLetters.get(id))?.requeuedAt).toBeNull();
    } finally {
      await context.close();
    }
  });
});
