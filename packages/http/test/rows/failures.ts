/**
 * The rows of the semantics table (docs/http.md) about what the handler's outcome leaves:
 * stored statuses, rolled-back ones, thrown errors, a request still running, expiry, and a
 * response too large to store; for each adapter.
 */
import { PROBLEM_TYPES } from '@justonce/http';
import { freshKey, postOrder, sf } from '../support/client';
import { expectProblem } from '../support/expect-problem';
import type { Row } from '../support/harness';
import { countEvents, countOrders, sleep, type OrdersEnv } from '../support/orders';
import { waitFor } from '../../../../test-support/wait-for';

/**
 * Asserts that a response body tells nothing of the error behind it: not its message, no
 * stack frame, no file path, not the key.
 */
function expectNothingOfTheError(text: string, key: string): void {
  expect(text).not.toContain('the handler failed');
  expect(text).not.toMatch(/\bat \S+ \(|node_modules|\.ts:\d|\.js:\d|<html|<pre/i);
  expect(text).not.toContain(process.cwd());
  expect(text).not.toContain(key);
}

/** Waits until the handler started for `key` (unquoted) `times` times. */
function handlerStarted(env: OrdersEnv, key: string, times = 1): Promise<boolean> {
  return waitFor(`the handler for ${key}`, () => (env.runs.get(key) ?? 0) >= times);
}

export const FAILURE_ROWS: readonly Row[] = [
  {
    case: 'the handler answers 4xx: stored and replayed like a 2xx',
    pglite: true,
    async run(app, env) {
      const key = freshKey('four');
      const body = { item: freshKey('four-item'), behaviour: 'bad-request' };
      const first = await postOrder(app.url, { key: sf(key), body });
      const again = await postOrder(app.url, { key: sf(key), body });
      expect([first.status, again.status]).toEqual([400, 400]);
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect(again.bytes.equals(first.bytes)).toBe(true);
      expect(env.runs.get(key)).toBe(1);
    },
  },
  {
    case: 'the handler answers 5xx: sent, its writes rolled back, the key free for a retry',
    pglite: true,
    async run(app, env) {
      const key = freshKey('five');
      const item = freshKey('five-item');
      const body = { item, behaviour: 'server-error-once' };
      const failed = await postOrder(app.url, { key: sf(key), body });
      expect(failed.status).toBe(503);
      expect(failed.json).toEqual({ error: 'try later' });
      expect(failed.headers.get('idempotent-replayed')).toBeNull();
      expect(await countOrders(env, item)).toBe(0);
      expect(await countEvents(env, item)).toBe(0);
      const retried = await postOrder(app.url, { key: sf(key), body });
      expect(retried.status).toBe(201);
      expect(retried.headers.get('idempotent-replayed')).toBeNull();
      expect(await countOrders(env, item)).toBe(1);
      expect(await countEvents(env, item)).toBe(1);
      expect(env.runs.get(key)).toBe(2);
    },
  },
  {
    case: 'the handler throws: 500 problem telling nothing of it, logged, rolled back, the key free',
    pglite: true,
    async run(app, env) {
      const key = freshKey('throw');
      const item = freshKey('throw-item');
      const body = { item, behaviour: 'throw-once' };
      const failed = await postOrder(app.url, { key: sf(key), body });
      expect(failed.status).toBe(500);
      expect(failed.headers.get('content-type')).toBe('application/problem+json');
      expect(failed.headers.get('idempotent-replayed')).toBeNull();
      expect(failed.headers.get('location')).toBeNull();
      expect(failed.headers.get('x-first-only')).toBeNull();
      expect(failed.json).toEqual({
        type: PROBLEM_TYPES.requestFailed,
        title: 'The request failed',
        status: 500,
        detail: expect.any(String),
        instance: expect.stringMatching(/^urn:uuid:[0-9a-f-]{36}$/),
      });
      expectNothingOfTheError(failed.bytes.toString('utf8'), key);
      const instance = (failed.json as { instance: string }).instance;
      const line = env.logged.find((logged) => logged.fields.instance === instance);
      expect(line).toMatchObject({ level: 'error', fields: { operation: 'create-order' } });
      expect((line?.fields.error as Error).message).toBe('the handler failed');
      expect(JSON.stringify(line?.fields)).not.toContain(key);
      expect(await countOrders(env, item)).toBe(0);
      const retried = await postOrder(app.url, { key: sf(key), body });
      expect(retried.status).toBe(201);
      expect(env.runs.get(key)).toBe(2);
      expect(await countOrders(env, item)).toBe(1);
      expect(await countEvents(env, item)).toBe(1);
    },
  },
  {
    case: 'the handler throws an error with a 4xx of its own: that status as a problem, rolled back',
    pglite: true,
    async run(app, env) {
      const key = freshKey('throw-404');
      const item = freshKey('throw-404-item');
      const body = { item, behaviour: 'throw-not-found' };
      const failed = await postOrder(app.url, { key: sf(key), body });
      expect(failed.status).toBe(404);
      expect(failed.headers.get('content-type')).toBe('application/problem+json');
      expect(failed.json).toEqual({
        type: 'about:blank',
        title: 'Not Found',
        status: 404,
        detail: expect.any(String),
      });
      expectNothingOfTheError(failed.bytes.toString('utf8'), key);
      expect(await countOrders(env, item)).toBe(0);
      const again = await postOrder(app.url, { key: sf(key), body });
      expect(again.status).toBe(404);
      expect(again.headers.get('idempotent-replayed')).toBeNull();
      expect(env.runs.get(key)).toBe(2);
    },
  },
  {
    case: 'a malformed JSON body: 400, no order, nothing of the parser told',
    pglite: true,
    async run(app, env) {
      const key = freshKey('malformed');
      const response = await postOrder(app.url, {
        key: sf(key),
        text: '{"item": "malformed-item", ',
        contentType: 'application/json',
      });
      expect(response.status).toBe(400);
      expectNothingOfTheError(response.bytes.toString('utf8'), key);
      expect(env.runs.get(key)).toBeUndefined();
      expect(await countOrders(env, 'malformed-item')).toBe(0);
    },
  },
  {
    case: 'storeStatuses: a status it refuses rolls back like a 5xx',
    route: { storeStatuses: (status) => status < 400, operation: 'create-order-2xx-only' },
    async run(app, env) {
      const key = freshKey('only-2xx');
      const body = { item: freshKey('only-2xx-item'), behaviour: 'bad-request' };
      await postOrder(app.url, { key: sf(key), body });
      const again = await postOrder(app.url, { key: sf(key), body });
      expect(again.status).toBe(400);
      expect(again.headers.get('idempotent-replayed')).toBeNull();
      expect(env.runs.get(key)).toBe(2);
    },
  },
  {
    case: 'same key while the first still runs: 409 idempotency-key-in-progress, Retry-After',
    async run(app, env) {
      const key = freshKey('busy');
      const body = { item: freshKey('busy-item'), delayMs: 600 };
      const first = postOrder(app.url, { key: sf(key), body });
      await handlerStarted(env, key);
      const second = await postOrder(app.url, { key: sf(key), body });
      expectProblem(second, 409, 'inProgress');
      expect(second.headers.get('retry-after')).toBe('1');
      expect((await first).status).toBe(201);
      const third = await postOrder(app.url, { key: sf(key), body });
      expect(third.headers.get('idempotent-replayed')).toBe('true');
      expect(third.bytes.equals((await first).bytes)).toBe(true);
    },
  },
  {
    case: 'inProgress.waitMs: the second waits for the first and replays its response',
    route: { inProgress: { waitMs: 10_000 }, operation: 'create-order-waiting' },
    async run(app, env) {
      const key = freshKey('wait');
      const body = { item: freshKey('wait-item'), delayMs: 400 };
      const first = postOrder(app.url, { key: sf(key), body });
      await handlerStarted(env, key);
      const second = await postOrder(app.url, { key: sf(key), body });
      expect(second.status).toBe(201);
      expect(second.headers.get('idempotent-replayed')).toBe('true');
      expect(second.bytes.equals((await first).bytes)).toBe(true);
      expect(env.runs.get(key)).toBe(1);
    },
  },
  {
    case: 'after retentionMs the key is free: the request runs again',
    route: { retentionMs: 300, operation: 'create-order-short' },
    async run(app, env) {
      const key = freshKey('expiring');
      const item = freshKey('expiring-item');
      const first = await postOrder(app.url, { key: sf(key), body: { item } });
      await sleep(500);
      const later = await postOrder(app.url, { key: sf(key), body: { item } });
      expect([first.status, later.status]).toEqual([201, 201]);
      expect(later.headers.get('idempotent-replayed')).toBeNull();
      expect(await countOrders(env, item)).toBe(2);
    },
  },
  {
    case: 'a response too large to store: 500, rolled back; the key then answers 500 idempotency-key-failed',
    route: { operation: 'create-order-tiny-records' },
    operations: { maxResponseBytes: 64 },
    async run(app, env) {
      const key = freshKey('too-large');
      const item = freshKey('too-large-item');
      const first = await postOrder(app.url, { key: sf(key), body: { item } });
      expect(first.status).toBe(500);
      expect(first.headers.get('location')).toBeNull();
      expect(await countOrders(env, item)).toBe(0);
      expectProblem(await postOrder(app.url, { key: sf(key), body: { item } }), 500, 'keyFailed');
      expect(env.runs.get(key)).toBe(1);
    },
  },
];
