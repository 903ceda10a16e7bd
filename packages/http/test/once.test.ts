/**
 * `once` in each adapter's handler context: a step whose response is rolled back (a 503, not
 * stored) is replayed to the retry with the same key instead of calling again; a request
 * without a key gets no `once` that records (`OnceUnavailableError`, answered 500).
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import Fastify from 'fastify';
import { createOperations, isOnceUnavailableError, type Once, type Store } from '@justonce/core';
import { idempotent, toNodeListener } from '@justonce/http';
import { idempotency, idempotencyContext, idempotencyErrorHandler } from '@justonce/http/express';
import { idempotencyPlugin } from '@justonce/http/fastify';
import { openTestStore } from '../../core/test/db';
import { freshKey, postOrder } from './support/client';

type Route = (once: Once, key: string | undefined) => Promise<{ status: number; body: unknown }>;

/** A server on port 0; resolves to its URL and close. */
async function listen(
  handler: Parameters<typeof createServer>[1],
): Promise<{ url: string; close(): Promise<void> }> {
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise<void>((done) => server.close(() => done())),
  };
}

const ADAPTERS: Record<
  string,
  (store: Store, route: Route) => Promise<{ url: string; close(): Promise<void> }>
> = {
  fetch: (store, route) => {
    const options = { operations: createOperations({ store }), operation: 'pay', required: false };
    return listen(
      toNodeListener(
        idempotent({ ...options, scope: 'shared' }, async (_request, { key, once }) => {
          const { status, body } = await route(once, key);
          return Response.json(body, { status });
        }),
      ),
    );
  },
  express: (store, route) => {
    const app = express();
    app.post(
      '/orders',
      idempotency({
        operations: createOperations({ store }),
        operation: 'pay',
        scope: 'shared',
        required: false,
      }),
      async (_req: express.Request, res: express.Response) => {
        const { key, once } = idempotencyContext(res);
        const { status, body } = await route(once, key);
        res.status(status).json(body);
      },
      idempotencyErrorHandler(),
    );
    return listen(app);
  },
  fastify: async (store, route) => {
    const app = Fastify();
    await app.register(idempotencyPlugin, {
      operations: createOperations({ store }),
      scope: 'shared',
    });
    app.post(
      '/orders',
      { config: { idempotency: { operation: 'pay', required: false } } },
      async (request, reply) => {
        const { key, once } = request.idempotency;
        const { status, body } = await route(once, key);
        return reply.code(status).send(body);
      },
    );
    await app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = app.server.address() as AddressInfo;
    return { url: `http://127.0.0.1:${port}`, close: () => app.close() };
  },
};

let store: Awaited<ReturnType<typeof openTestStore>>;
beforeAll(async () => {
  store = await openTestStore('postgres');
});
afterAll(async () => {
  await store.dispose();
});

describe.each(Object.keys(ADAPTERS))('once in a %s route', (name) => {
  it('replays a step to the retry of a rolled-back response; refuses without a key', async () => {
    const calls: string[] = [];
    let answered = 0;
    const route: Route = async (once, key) => {
      try {
        const charge = await once('charge', async (stepKey) => {
          calls.push(stepKey);
          return { charged: calls.length };
        });
        answered += 1;
        // The first answer is a 503: not stored, rolled back, the key free for a retry.
        return answered === 1
          ? { status: 503, body: { retry: true } }
          : { status: 201, body: charge };
      } catch (error) {
        return { status: 500, body: { unavailable: isOnceUnavailableError(error), key } };
      }
    };
    const app = await ADAPTERS[name]!(store, route);
    try {
      const key = freshKey('once');
      expect((await postOrder(app.url, { key, body: {} })).status).toBe(503);
      const retry = await postOrder(app.url, { key, body: {} });
      expect({ status: retry.status, json: retry.json }).toEqual({
        status: 201,
        json: { charged: 1 },
      });
      expect(calls).toHaveLength(1);
      const keyless = await postOrder(app.url, { body: {} });
      expect(keyless.json).toEqual({ unavailable: true });
      expect(calls).toHaveLength(1);
    } finally {
      await app.close();
    }
  });
});
