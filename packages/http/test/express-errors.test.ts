/**
 * Express only: errors that reach `idempotencyErrorHandler` from outside an idempotent
 * handler, on real servers. The body parser's refusal of a malformed JSON body (before the
 * middleware) is a 400 problem, not Express's HTML page; an error with no status of its own
 * from before the handler (the scope function's) is the 500 problem, logged through the
 * error handler's logger.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import express4 from 'express4';
import { createOperations } from '@justonce/core';
import { PROBLEM_TYPES } from '@justonce/http';
import { idempotency, idempotencyErrorHandler } from '@justonce/http/express';
import { freshKey, postOrder, sf } from './support/client';
import { openOrdersEnv, type OrdersEnv } from './support/orders';

describe.each([
  ['express', express],
  ['express 4', express4 as unknown as typeof express],
])('%s: idempotencyErrorHandler', (_name, framework) => {
  let env: OrdersEnv;
  let url: string;
  let close: () => Promise<void>;

  beforeAll(async () => {
    env = await openOrdersEnv('pglite');
    const app = framework();
    app.post(
      '/orders',
      framework.json(),
      idempotency({
        operations: createOperations({ store: env.store }),
        operation: 'express-errors',
        scope: (req) => {
          if (req.get('x-client-id') === 'broken') throw new Error('the scope failed: secret');
          return req.get('x-client-id');
        },
        logger: env.logger,
      }),
      (_req: express.Request, res: express.Response) => {
        res.status(201).json({ ok: true });
      },
      idempotencyErrorHandler({ logger: env.logger }),
    );
    const server = createServer(app);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    close = () => new Promise((resolve) => server.close(() => resolve()));
  });

  afterAll(async () => {
    await close();
    await env.store.dispose();
  });

  it('answers a malformed JSON body with a 400 problem, nothing of the parser told', async () => {
    const response = await postOrder(url, {
      key: sf(freshKey('malformed')),
      text: '{"item": ',
      contentType: 'application/json',
    });
    expect(response.status).toBe(400);
    expect(response.headers.get('content-type')).toBe('application/problem+json');
    expect(response.json).toEqual({
      type: 'about:blank',
      title: 'Bad Request',
      status: 400,
      detail: expect.any(String),
    });
    expect(response.bytes.toString('utf8')).not.toMatch(/JSON|position|node_modules/);
  });

  it('answers an error from before the handler with the 500 problem, logged', async () => {
    const response = await postOrder(url, { key: sf(freshKey('scope')), client: 'broken' });
    expect(response.status).toBe(500);
    expect(response.headers.get('content-type')).toBe('application/problem+json');
    const { instance } = response.json as { instance: string };
    expect(response.json).toEqual({
      type: PROBLEM_TYPES.requestFailed,
      title: 'The request failed',
      status: 500,
      detail: expect.any(String),
      instance: expect.stringMatching(/^urn:uuid:/),
    });
    expect(response.bytes.toString('utf8')).not.toContain('secret');
    const line = env.logged.find((logged) => logged.fields.instance === instance);
    expect(line?.level).toBe('error');
    expect((line?.fields.error as Error).message).toBe('the scope failed: secret');
  });
});
