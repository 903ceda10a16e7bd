/**
 * Wrong tokens over real HTTP, from clients told apart by their address: the dashboard served
 * on 127.0.0.1, requests sent from 127.0.0.1 and 127.0.0.2 (both loopback on Linux). A stale
 * script's wrong Bearer tokens lock out that script only; guessing from one client is still
 * answered 429, with a lockout that grows.
 */
import { request } from 'node:http';
import { createOutbox } from '@justonce/core';
import express from 'express';
import Fastify from 'fastify';
import {
  createDashboard,
  dashboardListener,
  fastifyDashboard,
  serveDashboard,
  type ServedDashboard,
} from '@justonce/dashboard';
import { freshStore, listen, type TestStore } from './fixtures';

const TOKEN = 'operator-token-for-throttle-tests';
const PERSON = '127.0.0.1';
const SCRIPT = '127.0.0.2';

let t: TestStore;

beforeAll(async () => {
  t = await freshStore('dash_throttle');
});

afterAll(async () => {
  await t?.close();
});

/** A pending outbox event (no relay runs) to delete; gives its row id. */
async function pendingEvent(): Promise<string> {
  const outbox = createOutbox({ store: t.store });
  const [messageId] = await t.store.knex.transaction((trx) =>
    outbox.add(trx, [{ destination: 'orders', payload: { n: 1 } }]),
  );
  const entries = await t.admin.outbox.list({ status: 'pending', limit: 1000 });
  return entries.find((e) => e.messageId === messageId)!.id;
}

interface Answer {
  readonly status: number;
  readonly retryAfter: string | undefined;
}

/** A POST sent from the loopback address `from`, as a client on that address would. */
function postFrom(
  from: string,
  url: string,
  headers: Record<string, string>,
  body = '',
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: 'POST',
        localAddress: from,
        headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
      },
      (res) => {
        res.resume();
        res.on('end', () => {
          const retryAfter = res.headers['retry-after'];
          resolve({ status: res.statusCode ?? 0, retryAfter });
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

describe('wrong tokens, counted per client', () => {
  let served: ServedDashboard;
  let origin: string;

  beforeEach(async () => {
    served = await serveDashboard({ admin: t.admin, token: TOKEN, port: 0 });
    origin = served.url.replace(/\/$/, '');
  });

  afterEach(async () => {
    await served.close();
  });

  const logIn = (from: string, token: string): Promise<Answer> =>
    postFrom(
      from,
      `${origin}/login`,
      { origin, 'content-type': 'application/x-www-form-urlencoded' },
      new URLSearchParams({ token }).toString(),
    );
  const bearer = (from: string, token: string, id: string): Promise<Answer> =>
    postFrom(from, `${origin}/outbox/${id}/delete`, { authorization: `Bearer ${token}` });

  it('a stale script locks out only itself: a person still logs in, on another address or the same', async () => {
    const id = await pendingEvent();
    for (let i = 0; i < 5; i++)
      expect((await bearer(SCRIPT, 'stale-token-of-a-script', id)).status).toBe(401);
    for (let i = 0; i < 3; i++) {
      const locked = await bearer(SCRIPT, 'stale-token-of-a-script', id);
      expect(locked.status).toBe(429);
      expect(Number(locked.retryAfter)).toBeGreaterThanOrEqual(1);
    }
    // The script is locked, even with the right token…
    expect((await bearer(SCRIPT, TOKEN, id)).status).toBe(429);
    expect(await t.admin.outbox.get(id)).toBeDefined();
    // …but the person at the login form is not, on their own address or on the script's.
    expect((await logIn(PERSON, TOKEN)).status).toBe(303);
    expect((await logIn(SCRIPT, TOKEN)).status).toBe(303);
    // Nor is another client's Bearer header.
    expect((await bearer(PERSON, TOKEN, id)).status).toBe(303);
    expect(await t.admin.outbox.get(id)).toBeUndefined();
  });

  it('guessing from one client is throttled: 429 with a lockout that doubles, then the right token ends it', async () => {
    const id = await pendingEvent();
    for (let i = 0; i < 5; i++)
      expect((await logIn(SCRIPT, `guess-number-${i}-xxxxxxxx`)).status).toBe(401);
    // Locked: the right token is not even checked.
    const refused = await logIn(SCRIPT, TOKEN);
    expect(refused).toEqual({ status: 429, retryAfter: '1' });
    // Guessing through a Bearer header as well is throttled on its own count, as fast.
    for (let i = 0; i < 5; i++)
      expect((await bearer(SCRIPT, `guess-number-${i}-yyyyyyyy`, id)).status).toBe(401);
    expect((await bearer(SCRIPT, TOKEN, id)).status).toBe(429);
    // Reading needs no token, and goes on.
    expect((await fetch(`${origin}/outbox/${id}`)).status).toBe(200);

    await new Promise((resolve) => setTimeout(resolve, 1_100));
    // One more wrong token after the lockout doubles it.
    expect((await logIn(SCRIPT, 'guess-after-the-lock-xxxx')).status).toBe(401);
    expect(await logIn(SCRIPT, TOKEN)).toEqual({ status: 429, retryAfter: '2' });

    await new Promise((resolve) => setTimeout(resolve, 2_100));
    expect((await logIn(SCRIPT, TOKEN)).status).toBe(303);
    // The right token ended the count: a wrong one is answered 401 again, not locked.
    expect((await logIn(SCRIPT, 'guess-once-more-xxxxxxxx')).status).toBe(401);
    expect(await t.admin.outbox.get(id)).toBeDefined();
  });
});

describe('the client address in Express and Fastify', () => {
  const mounts: Record<
    string,
    (dashboard: ReturnType<typeof createDashboard>) => Promise<{
      origin: string;
      close(): Promise<void>;
    }>
  > = {
    Express: async (dashboard) => {
      const app = express();
      app.use('/ops', dashboardListener(dashboard));
      return listen(app);
    },
    Fastify: async (dashboard) => {
      const app = Fastify();
      await app.register(fastifyDashboard(dashboard), { prefix: '/ops' });
      await app.listen({ port: 0, host: '127.0.0.1' });
      const { port } = app.server.address() as { port: number };
      return { origin: `http://127.0.0.1:${port}`, close: () => app.close() };
    },
  };

  for (const [name, mount] of Object.entries(mounts)) {
    it(`${name}: a script's wrong Bearer tokens do not lock another address's Bearer header`, async () => {
      const dashboard = createDashboard({ admin: t.admin, token: TOKEN, basePath: '/ops' });
      const server = await mount(dashboard);
      try {
        const id = await pendingEvent();
        const bearer = (from: string, token: string): Promise<Answer> =>
          postFrom(from, `${server.origin}/ops/outbox/${id}/delete`, {
            authorization: `Bearer ${token}`,
          });
        for (let i = 0; i < 5; i++)
          expect((await bearer(SCRIPT, 'stale-token-of-a-script')).status).toBe(401);
        expect((await bearer(SCRIPT, TOKEN)).status).toBe(429);
        expect((await bearer(PERSON, TOKEN)).status).toBe(303);
        expect(await t.admin.outbox.get(id)).toBeUndefined();
      } finally {
        dashboard.close();
        await server.close();
      }
    });
  }
});
