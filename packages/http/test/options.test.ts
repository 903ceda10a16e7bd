/**
 * Options are validated when a route is built, and a handler that asks for its context
 * without the middleware or plugin gets a clear error. PGlite: nothing here needs a server.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import Fastify from 'fastify';
import { createOperations, isJustonceError, silentLogger, type Operations } from '@justonce/core';
import {
  idempotent,
  isIdempotencyContextError,
  isStoredResponseError,
  type ErrorLogging,
  type IdempotencyOptions,
} from '@justonce/http';
import { idempotency, idempotencyContext, idempotencyErrorHandler } from '@justonce/http/express';
import { idempotencyPlugin } from '@justonce/http/fastify';
import { openTestStore } from '../../core/test/db';

let store: Awaited<ReturnType<typeof openTestStore>>;
let operations: Operations;

beforeAll(async () => {
  store = await openTestStore('pglite');
  operations = createOperations({ store });
});
afterAll(async () => {
  await store.dispose();
});

const ok = async (): Promise<Response> => new Response('ok');

function base(): IdempotencyOptions<Request> {
  return { operations, operation: 'create-order', scope: 'shared' };
}

/** The ConfigurationError `build` throws, checked by its code. */
function configurationError(build: () => unknown): {
  message: string;
  details: Readonly<Record<string, unknown>>;
} {
  try {
    build();
  } catch (error) {
    if (isJustonceError(error) && error.code === 'INVALID_CONFIG') return error;
    throw error;
  }
  throw new Error('expected a ConfigurationError');
}

describe('options are validated at construction', () => {
  it.each([
    [
      'an unknown key, with the nearest known one',
      { requried: true },
      /unknown option `requried`; did you mean `required`/,
    ],
    [
      'an unknown nested key',
      { inProgress: { waitms: 10 } },
      /unknown option `inProgress.waitms`; did you mean `inProgress.waitMs`/,
    ],
    ['an unknown fingerprint key', { fingerprint: { header: ['x'] } }, /`fingerprint.header`/],
    ['no operations', { operations: undefined }, /needs operations/],
    ['an empty operation name', { operation: '' }, /operation must be a string of 1 to 200/],
    [
      'a scope that is neither a function nor shared',
      { scope: 'tenant-1' },
      /scope must be a function/,
    ],
    ['a store that is not one', { required: false, store: 42 }, /store must be a store/],
    [
      'a replay header that is not a header name',
      { replayHeaders: ['bad header'] },
      /replayHeaders must list HTTP header names/,
    ],
    [
      'a negative wait',
      { inProgress: { waitMs: -1 } },
      /inProgress.waitMs must be a finite number/,
    ],
    [
      'a retention of zero',
      { retentionMs: 0 },
      /retentionMs must be a finite number of milliseconds, at least 1/,
    ],
    ['a key length of zero', { maxKeyLength: 0 }, /maxKeyLength must be a positive integer/],
    [
      'storeStatuses that is not a function',
      { storeStatuses: [200] },
      /storeStatuses must be a function/,
    ],
    ['a logger without its four methods', { logger: console.log }, /logger must have debug/],
    [
      'an unknown resilience key',
      { resilience: { breaker: { opneMs: 1 } } },
      /unknown option `resilience.breaker.opneMs`; did you mean `resilience.breaker.openMs`/,
    ],
    [
      'a budget ratio above 1',
      { resilience: { budget: { ratio: 2 } } },
      /budget.ratio must be a number >= 0 and <= 1/,
    ],
  ])('refuses %s', (_what, change, message) => {
    const options = { ...base(), ...change } as unknown as IdempotencyOptions<Request>;
    expect(configurationError(() => idempotent(options, ok)).message).toMatch(message);
    expect(
      configurationError(() =>
        idempotency(options as unknown as IdempotencyOptions<express.Request>),
      ).message,
    ).toMatch(message);
  });

  it('takes every option it documents', () => {
    const every: Required<IdempotencyOptions<Request> & ErrorLogging> = {
      operations,
      operation: 'create-order',
      scope: (request) => request.headers.get('x-client-id') ?? undefined,
      required: false,
      store,
      fingerprint: { headers: ['x-api-version'], ignoreFields: ['sentAt'] },
      storeStatuses: (status) => status < 500,
      replayHeaders: ['location'],
      inProgress: { waitMs: 100 },
      retentionMs: 60_000,
      maxKeyLength: 64,
      resilience: {
        budget: { ratio: 0.1 },
        breaker: { openMs: 5_000, key: (request) => new URL(request.url).pathname },
      },
      logger: silentLogger,
    };
    expect(typeof idempotent(every, ok)).toBe('function');
  });

  it('idempotencyErrorHandler refuses an unknown option and a bad logger', () => {
    expect(
      configurationError(() => idempotencyErrorHandler({ loger: silentLogger } as never)).message,
    ).toMatch(/unknown option `loger`; did you mean `logger`/);
    expect(
      configurationError(() => idempotencyErrorHandler({ logger: {} as never })).message,
    ).toMatch(/idempotencyErrorHandler: logger must have debug/);
    expect(idempotencyErrorHandler()).toHaveLength(4); // Express's mark of an error handler
  });

  it('accepts the smallest valid options', () => {
    expect(typeof idempotent(base(), ok)).toBe('function');
    expect(
      typeof idempotency({ operations, operation: 'x', scope: (req) => req.get('x-client-id') }),
    ).toBe('function');
  });

  it('refuses unknown plugin defaults when registered, and bad route options when the route is added', async () => {
    const unknownDefault = Fastify();
    await expect(
      unknownDefault.register(idempotencyPlugin, { operations, scopes: 'shared' } as never).ready(),
    ).rejects.toThrow(/unknown option `scopes`; did you mean `scope`/);
    await unknownDefault.close();

    const badRoute = Fastify();
    await badRoute.register(idempotencyPlugin, { operations, scope: 'shared' });
    expect(() =>
      badRoute.post('/orders', { config: { idempotency: { operation: '' } } }, async () => 'ok'),
    ).toThrow(/idempotencyPlugin \(route POST \/orders\): operation must be a string/);
    await badRoute.close();
  });
});

describe('StoredResponseError', () => {
  it('is what a key answers whose record another user of the operation name wrote', async () => {
    const handle = idempotent(
      { operations, operation: 'shared-name', scope: 'shared', fingerprint: () => 'same' },
      ok,
    );
    await operations.run('k-1', { custom: 'same' }, async () => ({ not: 'an HTTP response' }), {
      operation: 'shared-name',
    });
    const request = new Request('http://localhost/orders', {
      method: 'POST',
      headers: { 'idempotency-key': '"k-1"' },
    });
    const caught: unknown = await handle(request).catch((error: unknown) => error);
    expect(isStoredResponseError(caught)).toBe(true);
    expect(caught).toMatchObject({ code: 'STORED_RESPONSE_UNREADABLE', retriable: false });
  });
});

describe('a handler asking for its context without the middleware or plugin', () => {
  it('Express: idempotencyContext(res) throws IdempotencyContextError', async () => {
    const app = express();
    let caught: unknown;
    app.post('/orders', (_req, res) => {
      try {
        idempotencyContext(res);
      } catch (error) {
        caught = error;
      }
      res.status(204).end();
    });
    const server = createServer(app).listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    const { port } = server.address() as AddressInfo;
    await fetch(`http://127.0.0.1:${port}/orders`, { method: 'POST' });
    await new Promise((resolve) => server.close(resolve));
    expect(isIdempotencyContextError(caught)).toBe(true);
    expect(String(caught)).toMatch(/put the idempotency\(\.\.\.\) middleware/);
  });

  it('Fastify: request.idempotency throws IdempotencyContextError on a route without config.idempotency', async () => {
    const app = Fastify();
    await app.register(idempotencyPlugin, { operations, scope: 'shared' });
    let caught: unknown;
    app.post('/plain', async (request, reply) => {
      try {
        void request.idempotency.trx;
      } catch (error) {
        caught = error;
      }
      return reply.code(204).send();
    });
    await app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = app.server.address() as AddressInfo;
    await fetch(`http://127.0.0.1:${port}/plain`, { method: 'POST' });
    await app.close();
    expect(isIdempotencyContextError(caught)).toBe(true);
  });
});
