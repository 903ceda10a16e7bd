/**
 * The three adapters serving the orders app on a real HTTP server each (port 0), so one
 * table of cases runs against Fetch (node:http through toNodeListener), Express and Fastify.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import express4 from 'express4';
import Fastify, { type FastifyRequest } from 'fastify';
import { idempotent, toNodeListener, type IdempotencyOptions } from '@justonce/http';
import { idempotency, idempotencyContext, idempotencyErrorHandler } from '@justonce/http/express';
import { idempotencyPlugin } from '@justonce/http/fastify';
import { encodeBody, handleOrder, type OrdersEnv } from './orders';

/** The route options a test sets; scope and fingerprint functions are the harness's. */
export type RouteOptions = Omit<
  Partial<IdempotencyOptions<unknown>>,
  'scope' | 'fingerprint' | 'operations'
> & {
  /** `client` (default): the `x-client-id` header; `shared`: one scope for all. */
  readonly scope?: 'client' | 'shared';
  /** A fingerprint object, or `header:<name>` for a function that fingerprints that header only. */
  readonly fingerprint?: IdempotencyOptions<unknown>['fingerprint'] | `header:${string}`;
  readonly operations: IdempotencyOptions<unknown>['operations'];
};

/** A server running the orders app. */
export interface RunningApp {
  /** Base URL, e.g. `http://127.0.0.1:40123`. */
  readonly url: string;
  close(): Promise<void>;
}

export interface Adapter {
  readonly name: 'fetch' | 'express' | 'express 4' | 'fastify';
  /** Serves `POST /orders` with the options given (operation `create-order` unless set). */
  start(env: OrdersEnv, options: RouteOptions): Promise<RunningApp>;
}

const CLIENT_HEADER = 'x-client-id';

/** The options as the adapter takes them, with its framework's scope and fingerprint functions. */
function routeOptions<Req>(
  options: RouteOptions,
  header: (request: Req, name: string) => string | undefined,
): IdempotencyOptions<Req> {
  const { scope, fingerprint, ...rest } = options;
  return {
    operation: 'create-order',
    ...rest,
    scope: scope === 'shared' ? 'shared' : (request: Req) => header(request, CLIENT_HEADER),
    ...(fingerprint === undefined
      ? {}
      : typeof fingerprint === 'string'
        ? { fingerprint: (request: Req) => header(request, fingerprint.slice('header:'.length)) }
        : { fingerprint }),
  };
}

function listen(server: Server): Promise<RunningApp> {
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      resolve({
        url: `http://127.0.0.1:${port}`,
        close: () =>
          new Promise<void>((done) => {
            server.closeAllConnections();
            server.close(() => done());
          }),
      });
    });
  });
}

const fetchAdapter: Adapter = {
  name: 'fetch',
  start(env, options) {
    const handle = idempotent(
      {
        ...routeOptions<Request>(
          options,
          (request, name) => request.headers.get(name) ?? undefined,
        ),
        logger: env.logger,
      },
      async (request, { trx, key }) => {
        const type = request.headers.get('content-type') ?? '';
        let body: unknown;
        try {
          body = type.includes('json') ? await request.json() : await request.text();
        } catch {
          // The Fetch handler parses the body: one it cannot parse is the client's 400.
          return Response.json({ error: 'malformed JSON' }, { status: 400 });
        }
        const clientId = request.headers.get(CLIENT_HEADER) ?? undefined;
        const response = await handleOrder(env, trx, key, { body, clientId });
        const { bytes, type: contentType } = encodeBody(response);
        const headers = new Headers(response.headers);
        if (contentType !== undefined) headers.set('content-type', contentType);
        return new Response(bytes ?? null, { status: response.status, headers });
      },
    );
    return listen(createServer(toNodeListener(handle)));
  },
};

/**
 * The orders app on Express 5 or 4. Express 4 does not pass an async handler's rejection to
 * `next`, so the handler hands it over itself, as docs/http.md tells Express 4 users to.
 */
function expressAdapter(name: 'express' | 'express 4', framework: typeof express): Adapter {
  return {
    name,
    start(env, options) {
      const app = framework();
      app.post(
        '/orders',
        framework.json(),
        idempotency({
          ...routeOptions<express.Request>(options, (req, name) => req.get(name)),
          logger: env.logger,
        }),
        (req: express.Request, res: express.Response, next: express.NextFunction) => {
          const respond = async (): Promise<void> => {
            const { trx, key } = idempotencyContext(res);
            const body: unknown = Buffer.isBuffer(req.body) ? req.body.toString('utf8') : req.body;
            const response = await handleOrder(env, trx, key, {
              body,
              clientId: req.get(CLIENT_HEADER),
            });
            res.status(response.status).set(response.headers);
            const { bytes, type } = encodeBody(response);
            if (type !== undefined) res.type(type);
            if (bytes === undefined) res.end();
            else res.send(bytes);
          };
          respond().catch(next);
        },
        idempotencyErrorHandler({ logger: env.logger }),
      );
      return listen(createServer(app));
    },
  };
}

const fastifyAdapter: Adapter = {
  name: 'fastify',
  async start(env, options) {
    const app = Fastify();
    const header = (request: FastifyRequest, name: string): string | undefined => {
      const value = request.headers[name];
      return Array.isArray(value) ? value.join(', ') : value;
    };
    // The plugin gets the shared part, the route the rest: the two are merged per route.
    const { operations, scope, ...own } = routeOptions<FastifyRequest>(options, header);
    await app.register(idempotencyPlugin, { operations, scope, logger: env.logger });
    app.post('/orders', { config: { idempotency: own } }, async (request, reply) => {
      const { trx, key } = request.idempotency;
      const response = await handleOrder(env, trx, key, {
        body: request.body,
        clientId: header(request, CLIENT_HEADER),
      });
      reply.code(response.status).headers(response.headers);
      const { bytes, type } = encodeBody(response);
      if (type !== undefined) reply.type(type);
      return reply.send(bytes);
    });
    await app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = app.server.address() as AddressInfo;
    return { url: `http://127.0.0.1:${port}`, close: () => app.close() };
  },
};

export const ADAPTERS: readonly Adapter[] = [
  fetchAdapter,
  expressAdapter('express', express),
  expressAdapter('express 4', express4),
  fastifyAdapter,
];
