/**
 * What the dashboard's tests share: a migrated store in a fresh schema of the test database
 * (dropped at the end), the admin over it, a node:http server to mount handlers on, and a
 * headless Chromium against a served dashboard, with what the browser tests do on its pages.
 */
import { mkdirSync } from 'node:fs';
import { createServer, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { createAdmin, createStore, type Admin, type Store } from '@justonce/core';
import {
  serveDashboard,
  type ServeDashboardOptions,
  type ServedDashboard,
} from '@justonce/dashboard';
import { chromium, type Browser, type Page } from 'playwright-core';
import { databaseUrl } from '../../../test-support/services';

/** Markup and script in a message body or payload: the pages must show it as text. */
export const XSS_BODY = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">';
/** Markup with a handler in a header value. */
export const XSS_HEADER = '<b onmouseover="window.__pwned=3">header</b>';

/** Screenshots go to test-output/dashboard/ at the repository root. */
const SHOTS = join(__dirname, '..', '..', '..', 'test-output', 'dashboard');

export interface TestStore {
  readonly store: Store;
  readonly admin: Admin;
  readonly schema: string;
  /** Drops the schema and closes the store. */
  close(): Promise<void>;
}

/** The MySQL or MariaDB URL the Jest global setup resolved. */
function mysqlUrl(): string {
  const url = process.env['MYSQL_URL'];
  if (url === undefined) throw new Error('MYSQL_URL is not set: run the tests through `pnpm test`');
  return url;
}

/**
 * A fresh, migrated schema named after `prefix`, this process and the time, on PostgreSQL
 * unless told (on MySQL the schema is a database).
 */
export async function freshStore(
  prefix: string,
  dialect: 'postgres' | 'mysql' = 'postgres',
): Promise<TestStore> {
  const schema = `${prefix}_${process.pid}_${Date.now().toString(36)}`;
  const connectionString = dialect === 'mysql' ? mysqlUrl() : databaseUrl();
  const store = await createStore({ connectionString, schema });
  await store.migrate();
  return {
    store,
    admin: createAdmin(store),
    schema,
    close: async () => {
      await store.knex.raw(
        dialect === 'mysql'
          ? `drop database if exists ${store.names.schema}`
          : `drop schema if exists ${store.names.schema} cascade`,
      );
      await store.close();
    },
  };
}

/** Listens on a free port of 127.0.0.1; resolves to the server and its origin. */
export async function listen(
  handler: RequestListener | Server,
): Promise<{ server: Server; origin: string; close(): Promise<void> }> {
  const server = typeof handler === 'function' ? createServer(handler) : handler;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    server,
    origin: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Headless Chromium (Debian's package, or `CHROMIUM_PATH`), one per test file. */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: process.env['CHROMIUM_PATH'] ?? '/usr/bin/chromium',
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

/** A served dashboard and a browser to look at it. */
export interface BrowserDashboard {
  readonly served: ServedDashboard;
  readonly browser: Browser;
  /** The absolute URL of a page of the dashboard (`path` as `/outbox/1`). */
  url(path: string): string;
  /** Closes the browser, then the server. */
  close(): Promise<void>;
}

/** Serves a dashboard on a free port and launches Chromium. */
export async function browserDashboard(
  options: Omit<ServeDashboardOptions, 'port'>,
): Promise<BrowserDashboard> {
  const served = await serveDashboard({ ...options, port: 0 });
  const browser = await launchChromium();
  return {
    served,
    browser,
    url: (path) => `${served.url.replace(/\/$/, '')}${path}`,
    close: async () => {
      await browser.close();
      await served.close();
    },
  };
}

/** A page in a new browser context that waits up to 10 s and accepts every confirmation. */
export async function operatorPage(browser: Browser): Promise<Page> {
  const context = await browser.newContext();
  context.setDefaultTimeout(10_000);
  const page = await context.newPage();
  page.on('dialog', (dialog) => void dialog.accept());
  return page;
}

/** Logs in through the header's link and the login form. */
export async function logIn(page: Page, token: string): Promise<void> {
  await page.click('header >> text=Log in');
  await page.fill('input[name="token"]', token);
  await page.click('form button[type="submit"]:has-text("Log in")');
}

/** What the XSS markup set if any of it ran: `undefined` when none did. */
export function pwned(page: Page): Promise<number | undefined> {
  return page.evaluate(() => (globalThis as { __pwned?: number }).__pwned);
}

/** Saves a full-page screenshot as test-output/dashboard/`name`.png. */
export async function screenshot(page: Page, name: string): Promise<void> {
  mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
}

/** The DOM form the page script touches (no DOM lib in the type check). */
interface FormLike {
  method: string;
  action: string;
  submit(): void;
}

/** Posts an empty form to `action` from the page itself (its CSP forbids `fetch`). */
export async function postFromPage(page: Page, action: string): Promise<void> {
  await page.evaluate((target) => {
    const doc = (
      globalThis as unknown as {
        document: {
          createElement(tag: string): FormLike;
          body: { append(node: unknown): void };
        };
      }
    ).document;
    const form = doc.createElement('form');
    form.method = 'post';
    form.action = target;
    doc.body.append(form);
    form.submit();
  }, action);
}
