/**
 * Control characters and lone surrogates in a real browser: headless Chromium against
 * `serveDashboard` over a real PostgreSQL store. Dead letters come from a real inbox (refused
 * headers with U+0000, a handler error with control characters), outbox events from the real
 * outbox and relay (a publish error with one). A browser drops U+0000 and shows nothing for
 * most controls, so each must be shown as its `\u0000` escape: in the body, header names and
 * values, error text, on the lists and on each page.
 */
import {
  createInbox,
  createMemoryPublisher,
  createOutbox,
  createRelay,
  type Relay,
} from '@justonce/core';
import type { Page } from 'playwright-core';
import { waitFor } from '../../../test-support/wait-for';
import {
  browserDashboard,
  freshStore,
  operatorPage,
  screenshot,
  type BrowserDashboard,
  type TestStore,
} from './fixtures';

/** A body with U+0000, ESC, DEL, a C1 control, a lone surrogate; tab and newline stay. */
const BODY = 'ab\u0000cd\u001b[31m\u007f\u0085\ud800|\tz\nend';
const BODY_SHOWN = 'ab\\u0000cd\\u001b[31m\\u007f\\u0085\\ud800|\tz\nend';

let t: TestStore;
let relay: Relay;
let dashboard: BrowserDashboard;
let page: Page;

async function letterId(consumer: string): Promise<string> {
  const [letter] = await t.admin.deadLetters.list({ consumer });
  if (letter === undefined) throw new Error(`no dead letter of ${consumer}`);
  return letter.id;
}

/** Every character of the page's main text that a browser shows as nothing or as U+FFFD. */
async function invisibleIn(selector: string): Promise<string[]> {
  const text = (await page.locator(selector).textContent()) ?? '';
  // eslint-disable-next-line no-control-regex
  return [...text.matchAll(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f\ufffd]|[\ud800-\udfff]/g)].map(
    ([c]) => `U+${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

beforeAll(async () => {
  t = await freshStore('dash_controls');
  const classify = (): 'non-retriable' => 'non-retriable';
  // Headers the store cannot keep as text: refused, dead-lettered with the delivery as given.
  await createInbox({ store: t.store, consumer: 'intake' }).process(
    {
      id: 'ctl-1',
      headers: { 'x-nul': 'a\u0000b', 'x-\u0007bell': 'ring\u0001' },
      body: BODY,
      delivery: {},
    },
    async () => 'not reached',
  );
  // A handler error with control characters in its message.
  await createInbox({ store: t.store, consumer: 'ledger', classify }).process(
    { id: 'ctl-2', headers: {}, body: '{}', delivery: {} },
    async () => {
      throw new Error('declined\u0001 by bank\u007f');
    },
  );
  const publisher = createMemoryPublisher();
  publisher.failKey('k-ctl', { retriable: false, message: 'refused\u0003 by broker' });
  await t.store.knex.transaction(async (trx) => {
    await createOutbox({ store: t.store }).add(trx, {
      destination: 'orders',
      key: 'k-ctl',
      messageId: 'evt-ctl',
      headers: { 'x-\u0002ctl': 'tab\there\u0001' },
      payload: 'pay\u0002load',
    });
  });
  relay = createRelay({ store: t.store, publisher, pollIntervalMs: 100 });
  await relay.start();
  await waitFor(
    'the event to die',
    async () => (await t.admin.outbox.list({ status: 'dead' })).length === 1,
  );
  dashboard = await browserDashboard({ admin: t.admin });
  page = await operatorPage(dashboard.browser);
});

afterAll(async () => {
  await dashboard?.close();
  await relay?.stop();
  await t?.close();
});

describe('control characters and lone surrogates in the browser', () => {
  it('a refused letter shows why: its header value, header name and body with every control escaped', async () => {
    await page.goto(dashboard.url(`/dead-letters/${await letterId('intake')}`));
    await expect(page.locator('#error-text').textContent()).resolves.toContain(
      'header "x-nul" contains U+0000',
    );
    const header = (name: string): Promise<string | null> =>
      page.locator('#headers tr', { hasText: name }).locator('td').textContent();
    await expect(header('x-nul')).resolves.toBe('a\\u0000b');
    await expect(page.locator('#headers th').allTextContents()).resolves.toContain('x-\\u0007bell');
    await expect(header('bell')).resolves.toBe('ring\\u0001');
    await expect(page.locator('#body').textContent()).resolves.toBe(BODY_SHOWN);
    expect(await invisibleIn('main')).toEqual([]);
    await screenshot(page, '13-control-characters-letter');
  });

  it('a handler error with controls shows them escaped, on the list and on the letter', async () => {
    await page.goto(dashboard.url('/dead-letters'));
    await expect(
      page.locator('#dead-letters tr', { hasText: 'ledger' }).textContent(),
    ).resolves.toContain('declined\\u0001 by bank\\u007f');
    expect(await invisibleIn('main')).toEqual([]);
    await page.goto(dashboard.url(`/dead-letters/${await letterId('ledger')}`));
    await expect(page.locator('#error-text').textContent()).resolves.toContain(
      'declined\\u0001 by bank\\u007f',
    );
  });

  it('an outbox event shows its error, header and payload with controls escaped', async () => {
    await page.goto(dashboard.url('/outbox'));
    await expect(
      page.locator('#outbox-events tr', { hasText: 'evt-ctl' }).textContent(),
    ).resolves.toContain('refused\\u0003 by broker');
    expect(await invisibleIn('main')).toEqual([]);
    const [event] = await t.admin.outbox.list({ status: 'dead' });
    await page.goto(dashboard.url(`/outbox/${event!.id}`));
    await expect(page.locator('#error-text').textContent()).resolves.toContain(
      'refused\\u0003 by broker',
    );
    await expect(page.locator('#headers th').allTextContents()).resolves.toContain('x-\\u0002ctl');
    await expect(
      page.locator('#headers tr', { hasText: 'x-' }).locator('td').textContent(),
    ).resolves.toBe('tab\there\\u0001');
    await expect(page.locator('#body').textContent()).resolves.toBe('pay\\u0002load');
    expect(await invisibleIn('main')).toEqual([]);
    await screenshot(page, '14-control-characters-outbox');
  });
});
