/**
 * One dashboard handler mounted under `/ops` in real Express, real Fastify and a plain
 * node:http server, over a real PostgreSQL store with events written by the real outbox:
 * reading needs nothing; an action needs the token (login cookie + CSRF token from the page,
 * or a bearer header), and is refused without it, with a wrong CSRF token or from another
 * origin.
 */
import { ConfigurationError, createInbox, createOutbox } from '@justonce/core';
import { connect } from 'node:net';
import express from 'express';
import Fastify, { type FastifyInstance } from 'fastify';
import {
  createDashboard,
  dashboardListener,
  fastifyDashboard,
  serveDashboard,
  type Dashboard,
} from '@justonce/dashboard';
import { freshStore, listen, type TestStore } from './fixtures';

const TOKEN = 'operator-token-for-mount-tests';
const BASE = '/ops';

let t: TestStore;
let dashboard: Dashboard;

/** Adds pending outbox events (no relay runs, so they stay pending) and gives their row ids. */
async function pendingEvents(count: number): Promise<string[]> {
  const outbox = createOutbox({ store: t.store });
  await t.store.knex.transaction(async (trx) => {
    await outbox.add(
      trx,
      Array.from({ length: count }, (_, i) => ({ destination: 'orders', payload: { n: i } })),
    );
  });
  const entries = await t.admin.outbox.list({ status: 'pending', limit: 1000 });
  return entries.map((e) => e.id).slice(-count);
}

beforeAll(async () => {
  t = await freshStore('dash_mount');
  dashboard = createDashboard({ admin: t.admin, token: TOKEN, basePath: BASE });
  // `s-1` delivered twice through a real inbox: one handled, one duplicate.
  const inbox = createInbox({ store: t.store, consumer: 'shipping' });
  for (const id of ['s-1', 's-1']) {
    await inbox.process({ id, headers: {}, body: '{}', delivery: {} }, async () => 'ok');
  }
  await inbox.flushActivity();
});

afterAll(async () => {
  dashboard?.close();
  await t?.close();
});

/** A session: the cookie from logging in and the CSRF token from a page. */
async function login(origin: string): Promise<{ cookie: string; csrf: string }> {
  const response = await fetch(`${origin}${BASE}/login`, {
    method: 'POST',
    redirect: 'manual',
    headers: { origin, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ token: TOKEN, next: '/outbox' }),
  });
  expect(response.status).toBe(303);
  expect(response.headers.get('location')).toBe(`${BASE}/outbox?done=logged-in`);
  const setCookie = response.headers.get('set-cookie') ?? '';
  expect(setCookie).toMatch(/HttpOnly/);
  expect(setCookie).toMatch(/SameSite=Strict/);
  expect(setCookie).toMatch(/Path=\/ops/);
  const cookie = setCookie.split(';')[0]!;
  const page = await (
    await fetch(`${origin}${BASE}/outbox?status=pending`, { headers: { cookie } })
  ).text();
  const csrf = /name="_csrf" value="([^"]+)"/.exec(page)?.[1];
  expect(csrf).toBeDefined();
  return { cookie, csrf: csrf! };
}

function post(
  origin: string,
  path: string,
  fields: Record<string, string>,
  headers: Record<string, string> = {},
): Promise<Response> {
  return fetch(`${origin}${BASE}${path}`, {
    method: 'POST',
    redirect: 'manual',
    headers: { origin, 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body: new URLSearchParams(fields),
  });
}

/** The same checks against any server the dashboard is mounted in. */
/**
 * A POST written on a raw socket, so that its framing is exactly `headers` (fetch and
 * node:http's client always add a length or chunk the body); resolves to the status code.
 */
async function rawPost(
  origin: string,
  path: string,
  headers: string[],
  body = '',
): Promise<number> {
  const answer = await rawAnswer(origin, path, headers, body);
  return Number(/^HTTP\/1\.1 (\d{3})/.exec(answer)?.[1] ?? 0);
}

/** {@link rawPost}, resolving to the whole answer: status line, headers and body. */
function rawAnswer(origin: string, path: string, headers: string[], body = ''): Promise<string> {
  const { hostname, port } = new URL(origin);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => {
      const head = [`POST ${path} HTTP/1.1`, `Host: ${hostname}:${port}`, 'Connection: close'];
      socket.write(`${[...head, ...headers].join('\r\n')}\r\n\r\n${body}`);
    });
    let answer = '';
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => (answer += chunk));
    socket.on('end', () => resolve(answer));
    socket.on('error', reject);
  });
}

function behavesMounted(
  name: string,
  start: () => Promise<{ origin: string; close(): Promise<void> }>,
): void {
  describe(name, () => {
    let server: { origin: string; close(): Promise<void> };
    beforeAll(async () => {
      server = await start();
    });
    afterAll(() => server?.close());

    it('serves the overview under the base path, with its links and headers', async () => {
      const response = await fetch(`${server.origin}${BASE}/`);
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toMatch(/text\/html/);
      expect(response.headers.get('x-frame-options')).toBe('DENY');
      const page = await response.text();
      expect(page).toContain('<h1>Overview</h1>');
      expect(page).toContain(`href="${BASE}/dead-letters"`);
      // Completed, duplicates and dead-lettered in the last hour.
      expect(page).toMatch(
        /<td>shipping<\/td>\s*<td class="n">1<\/td>\s*<td class="n">1<\/td>\s*<td class="n">0<\/td>/,
      );
      expect((await fetch(`${server.origin}${BASE}`)).status).toBe(200);
    });

    it('runs an action with the login cookie and CSRF token, and refuses it without', async () => {
      const [first, second, third] = await pendingEvents(3);
      const { cookie, csrf } = await login(server.origin);

      const anonymous = await post(server.origin, `/outbox/${first}/delete`, { _csrf: csrf });
      expect(anonymous.status).toBe(403);
      const wrongCsrf = await post(
        server.origin,
        `/outbox/${first}/delete`,
        { _csrf: 'x' + csrf },
        { cookie },
      );
      expect(wrongCsrf.status).toBe(403);
      const crossSite = await post(
        server.origin,
        `/outbox/${first}/delete`,
        { _csrf: csrf },
        { cookie, origin: 'http://evil.example' },
      );
      expect(crossSite.status).toBe(403);
      expect(await crossSite.text()).toContain('did not come from this dashboard');
      const badBearer = await post(
        server.origin,
        `/outbox/${first}/delete`,
        {},
        { authorization: 'Bearer not-the-token-at-all' },
      );
      expect(badBearer.status).toBe(401);
      expect(await t.admin.outbox.get(first!)).toBeDefined();

      const done = await post(
        server.origin,
        `/outbox/${first}/delete`,
        { _csrf: csrf },
        { cookie },
      );
      expect(done.status).toBe(303);
      expect(done.headers.get('location')).toBe(
        `${BASE}/outbox?done=deleted&what=outbox-event&n=1`,
      );
      expect(await t.admin.outbox.get(first!)).toBeUndefined();

      // Bulk, with the ids as repeated fields.
      const bulk = await fetch(`${server.origin}${BASE}/outbox/bulk`, {
        method: 'POST',
        redirect: 'manual',
        headers: {
          origin: server.origin,
          cookie,
          'content-type': 'application/x-www-form-urlencoded',
        },
        body: `_csrf=${encodeURIComponent(csrf)}&action=delete&back=status%3Dpending&id=${second}&id=${third}`,
      });
      expect(bulk.status).toBe(303);
      expect(bulk.headers.get('location')).toBe(
        `${BASE}/outbox?status=pending&done=deleted&what=outbox-event&n=2`,
      );
      expect(await t.admin.outbox.get(second!)).toBeUndefined();
      expect(await t.admin.outbox.get(third!)).toBeUndefined();
    });

    it('answers a body it will not read with 403, 411 or 413, and a POST without one as usual', async () => {
      const bearer = `Authorization: Bearer ${TOKEN}`;
      const path = `${BASE}/dead-letters/999999/delete`;
      // No body and no length: a POST as curl -X POST sends it.
      expect(await rawPost(server.origin, path, [])).toBe(403);
      expect(await rawPost(server.origin, path, [bearer])).toBe(303);
      const chunked = [
        'Transfer-Encoding: chunked',
        'Content-Type: application/x-www-form-urlencoded',
      ];
      expect(
        await rawPost(server.origin, path, [bearer, ...chunked], '5\r\nids=1\r\n0\r\n\r\n'),
      ).toBe(411);
      const big = 'a'.repeat(300 * 1024);
      expect(
        await rawPost(server.origin, path, [bearer, `Content-Length: ${big.length}`], big),
      ).toBe(413);
    });

    it('answers a body over the limit of its server with 413 and the security headers', async () => {
      const answer = await rawAnswer(server.origin, `${BASE}/dead-letters/999999/delete`, [
        `Authorization: Bearer ${TOKEN}`,
        'Content-Length: 2000000',
      ]);
      expect(answer).toMatch(/^HTTP\/1\.1 413/);
      expect(answer).toMatch(/^x-frame-options: DENY\r$/im);
      expect(answer).toMatch(/^content-security-policy: default-src 'none'/im);
    });

    it('takes the token as a bearer header, without cookie or CSRF token', async () => {
      const [id] = await pendingEvents(1);
      const response = await fetch(`${server.origin}${BASE}/outbox/${id}/delete`, {
        method: 'POST',
        redirect: 'manual',
        headers: { authorization: `Bearer ${TOKEN}` },
      });
      expect(response.status).toBe(303);
      expect(await t.admin.outbox.get(id!)).toBeUndefined();
    });
  });
}

behavesMounted('in Express (after a body parser)', async () => {
  const app = express();
  // A body parser the application mounted first: the dashboard still gets its form.
  app.use(express.urlencoded({ extended: false }));
  app.get('/health', (_req, res) => {
    res.json({ ok: true });
  });
  app.use(BASE, dashboardListener(dashboard));
  return listen(app);
});

behavesMounted('in Fastify', async () => {
  const app: FastifyInstance = Fastify();
  app.post('/api/echo', async (request) => request.body);
  await app.register(fastifyDashboard(dashboard), { prefix: BASE });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = app.server.address() as { port: number };
  const origin = `http://127.0.0.1:${port}`;
  // The plugin's raw-body parser stays inside it: the application's own routes still get JSON.
  const echo = await fetch(`${origin}/api/echo`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ a: 1 }),
  });
  expect(await echo.json()).toEqual({ a: 1 });
  return { origin, close: () => app.close() };
});

behavesMounted('in a plain node:http server', async () => {
  const listener = dashboardListener(dashboard);
  return listen((req, res) => {
    if (req.url === BASE || req.url?.startsWith(`${BASE}/`) || req.url?.startsWith(`${BASE}?`)) {
      void listener(req, res);
      return;
    }
    res.statusCode = 404;
    res.end();
  });
});

describe('options and the read-only mode', () => {
  it('refuses unknown options, a short token and a bad base path with ConfigurationError', () => {
    const bad: unknown[] = [
      { admin: t.admin, tokne: TOKEN },
      { admin: t.admin, token: 'short' },
      { admin: t.admin, basePath: 'ops' },
      { admin: t.admin, sampleEveryMs: 5 },
      { admin: {} },
    ];
    for (const options of bad) {
      expect(() => createDashboard(options as never)).toThrow(ConfigurationError);
    }
    expect(() => createDashboard({ admin: t.admin, tokne: TOKEN } as never)).toThrow(
      /unknown option `tokne`/,
    );
  });

  it('serves a read-only dashboard without a token: actions are 403 and buttons disabled', async () => {
    const [id] = await pendingEvents(1);
    const served = await serveDashboard({ admin: t.admin, port: 0 });
    try {
      expect(served.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/);
      const page = await (await fetch(`${served.url}outbox/${id}`)).text();
      expect(page).toMatch(/Read-only: no operator token/);
      expect(page).toMatch(/<button type="button" class="danger" disabled>Delete<\/button>/);
      const origin = served.url.replace(/\/$/, '');
      const refused = await fetch(`${served.url}outbox/${id}/delete`, {
        method: 'POST',
        headers: { origin, 'content-type': 'application/x-www-form-urlencoded' },
        body: '',
      });
      expect(refused.status).toBe(403);
      const login = await fetch(`${served.url}login`, {
        method: 'POST',
        headers: { origin, 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ token: TOKEN }),
      });
      expect(login.status).toBe(403);
      expect(await t.admin.outbox.get(id!)).toBeDefined();
    } finally {
      await served.close();
    }
  });
});

describe('as a Fetch handler (dashboard.fetch)', () => {
  const get = async (path: string): Promise<{ status: number; page: string }> => {
    const response = await dashboard.fetch(new Request(`http://dashboard.test${BASE}${path}`));
    return { status: response.status, page: await response.text() };
  };

  it('shows a JSON body pretty, bytes that are not UTF-8 as hex, and filters by time', async () => {
    const inbox = createInbox({ store: t.store, consumer: 'ledger', maxAttempts: 1 });
    const fail = async (): Promise<never> => {
      throw new Error('ledger closed');
    };
    await inbox.process(
      { id: 'j-1', scope: 'default', headers: {}, body: '{"amount":42}', delivery: {} },
      fail,
    );
    await inbox.process(
      {
        id: 'b-1',
        scope: 'default',
        headers: {},
        body: new Uint8Array([0xff, 0x00, 0x10]),
        delivery: {},
      },
      fail,
    );
    const letters = await t.admin.deadLetters.list({ consumer: 'ledger' });
    const json = letters.find((l) => l.messageId === 'j-1')!;
    const bytes = letters.find((l) => l.messageId === 'b-1')!;

    const jsonPage = await get(`/dead-letters/${json.id}`);
    expect(jsonPage.status).toBe(200);
    expect(jsonPage.page).toContain(
      '<pre id="body" data-kind="json">{\n  &quot;amount&quot;: 42\n}</pre>',
    );
    const bytesPage = await get(`/dead-letters/${bytes.id}`);
    expect(bytesPage.page).toMatch(/<pre id="body" data-kind="hex">00000000 {2}ff 00 10 /);

    const listed = await get('/dead-letters?consumer=ledger&since=2000-01-01T00:00');
    expect(listed.page.match(/<tr data-id=/g)).toHaveLength(2);
    const none = await get('/dead-letters?consumer=ledger&until=2000-01-01');
    expect(none.page).toContain('No dead letters match.');
    const bad = await get('/dead-letters?since=yesterday');
    expect(bad.status).toBe(400);
    expect(bad.page).toContain('since must be a date and time');
    expect((await get('/dead-letters/999999999')).status).toBe(404);
    const abc = await get('/dead-letters/abc');
    expect(abc.page).toContain('must be a positive');
    expect(abc.status).toBe(400);
  });

  it('shows an outbox event with its payload, and answers 404 outside the base path', async () => {
    const [id] = await pendingEvents(1);
    const { status, page } = await get(`/outbox/${id}`);
    expect(status).toBe(200);
    expect(page).toContain('<pre id="body" data-kind="json">');
    const outside = await dashboard.fetch(new Request('http://dashboard.test/elsewhere'));
    expect(outside.status).toBe(404);
    expect(outside.headers.get('x-frame-options')).toBe('DENY');
    expect(outside.headers.get('content-security-policy')).toMatch(/default-src 'none'/);
  });
});
