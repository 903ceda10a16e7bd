/**
 * The rows of the semantics table (docs/http.md) about first responses, replays and the
 * fingerprint, for each adapter: what a repeated key gets back, byte for byte.
 */
import { freshKey, postOrder, sf } from '../support/client';
import { expectProblem } from '../support/expect-problem';
import type { Row } from '../support/harness';
import { countEvents, countOrders } from '../support/orders';

export const REPLAY_ROWS: readonly Row[] = [
  {
    case: "first request: the handler's response after the commit, no Idempotent-Replayed",
    pglite: true,
    async run(app, env) {
      const item = freshKey('first');
      const response = await postOrder(app.url, { key: sf(freshKey()), body: { item } });
      expect(response.status).toBe(201);
      expect(response.headers.get('idempotent-replayed')).toBeNull();
      expect(response.headers.get('x-first-only')).toBe('yes');
      expect(response.json).toMatchObject({ item });
      expect(await countOrders(env, item)).toBe(1);
      expect(await countEvents(env, item)).toBe(1);
    },
  },
  {
    case: 'the bare key form (no quotes) is accepted too',
    async run(app, env) {
      const key = freshKey('bare');
      const item = freshKey('bare-item');
      const first = await postOrder(app.url, { key, body: { item } });
      const again = await postOrder(app.url, { key, body: { item } });
      expect(first.status).toBe(201);
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      // The two forms name the same key.
      const quoted = await postOrder(app.url, { key: sf(key), body: { item } });
      expect(quoted.headers.get('idempotent-replayed')).toBe('true');
      expect(await countOrders(env, item)).toBe(1);
    },
  },
  {
    case: 'same key, same request: stored status, headers and exact bytes, Idempotent-Replayed: true',
    pglite: true,
    route: { replayHeaders: ['Location'] },
    async run(app, env) {
      const key = sf(freshKey('replay'));
      const item = freshKey('replay-item');
      const first = await postOrder(app.url, { key, body: { item } });
      const runs = env.runs.get(key.slice(1, -1));
      const again = await postOrder(app.url, { key, body: { item } });
      expect(again.status).toBe(201);
      expect(again.bytes.equals(first.bytes)).toBe(true);
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect(again.headers.get('content-type')).toBe(first.headers.get('content-type'));
      expect(again.headers.get('location')).toBe(first.headers.get('location'));
      expect(again.headers.get('x-first-only')).toBeNull();
      expect(env.runs.get(key.slice(1, -1))).toBe(runs);
      expect(await countOrders(env, item)).toBe(1);
      expect(await countEvents(env, item)).toBe(1);
    },
  },
  {
    case: 'same key, the same JSON with other key order and spacing: replay',
    async run(app) {
      const key = sf(freshKey('canonical'));
      const item = freshKey('canonical-item');
      const first = await postOrder(app.url, {
        key,
        text: `{"item":"${item}","qty":2}`,
        contentType: 'application/json',
      });
      const again = await postOrder(app.url, {
        key,
        text: `{ "qty": 2,\n  "item": "${item}" }`,
        contentType: 'application/json',
      });
      expect(first.status).toBe(201);
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect(again.bytes.equals(first.bytes)).toBe(true);
    },
  },
  {
    case: 'same key, another body: 422 idempotency-key-reused',
    pglite: true,
    async run(app, env) {
      const key = sf(freshKey('reused'));
      const item = freshKey('reused-item');
      expect((await postOrder(app.url, { key, body: { item } })).status).toBe(201);
      expectProblem(await postOrder(app.url, { key, body: { item, qty: 3 } }), 422, 'keyReused');
      expectProblem(await postOrder(app.url, { key, text: 'plain' }), 422, 'keyReused');
      expect(await countOrders(env, item)).toBe(1);
    },
  },
  {
    case: 'same key, another query string: 422 idempotency-key-reused',
    async run(app) {
      const key = sf(freshKey('query'));
      const item = freshKey('query-item');
      expect((await postOrder(app.url, { key, query: '?express=1', body: { item } })).status).toBe(
        201,
      );
      expectProblem(
        await postOrder(app.url, { key, query: '?express=2', body: { item } }),
        422,
        'keyReused',
      );
    },
  },
  {
    case: 'fingerprint.headers: a listed header that differs is 422; others do not count',
    route: { fingerprint: { headers: ['X-Api-Version'] }, operation: 'create-order-versioned' },
    async run(app) {
      const key = sf(freshKey('versioned'));
      const body = { item: freshKey('versioned-item') };
      const v1 = { 'x-api-version': '1', 'x-trace': 'a' };
      expect((await postOrder(app.url, { key, body, headers: v1 })).status).toBe(201);
      const otherTrace = await postOrder(app.url, {
        key,
        body,
        headers: { ...v1, 'x-trace': 'b' },
      });
      expect(otherTrace.headers.get('idempotent-replayed')).toBe('true');
      const v2 = await postOrder(app.url, { key, body, headers: { 'x-api-version': '2' } });
      expectProblem(v2, 422, 'keyReused');
    },
  },
  {
    case: 'fingerprint.ignoreFields: a body differing only there replays',
    route: { fingerprint: { ignoreFields: ['sentAt'] }, operation: 'create-order-ignoring' },
    async run(app) {
      const key = sf(freshKey('ignoring'));
      const item = freshKey('ignoring-item');
      const first = await postOrder(app.url, { key, body: { item, sentAt: 1 } });
      const again = await postOrder(app.url, { key, body: { item, sentAt: 2 } });
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect(again.bytes.equals(first.bytes)).toBe(true);
      expectProblem(
        await postOrder(app.url, { key, body: { item: 'other', sentAt: 1 } }),
        422,
        'keyReused',
      );
    },
  },
  {
    case: 'fingerprint function: its value alone decides',
    route: { fingerprint: 'header:x-order-ref', operation: 'create-order-by-ref' },
    async run(app) {
      const key = sf(freshKey('by-ref'));
      const first = await postOrder(app.url, {
        key,
        body: { item: 'a' },
        headers: { 'x-order-ref': 'r1' },
      });
      const again = await postOrder(app.url, {
        key,
        body: { item: 'b' },
        headers: { 'x-order-ref': 'r1' },
      });
      expect(first.status).toBe(201);
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      const other = await postOrder(app.url, {
        key,
        body: { item: 'a' },
        headers: { 'x-order-ref': 'r2' },
      });
      expectProblem(other, 422, 'keyReused');
    },
  },
  {
    case: 'a text/plain response replays byte for byte',
    async run(app) {
      const key = sf(freshKey('text'));
      const body = { item: freshKey('text-item'), behaviour: 'text' };
      const first = await postOrder(app.url, { key, body });
      const again = await postOrder(app.url, { key, body });
      expect(first.headers.get('content-type')).toBe('text/plain; charset=utf-8');
      expect(first.bytes.toString('utf8')).toMatch(/^order \d+ for /);
      expect(again.bytes.equals(first.bytes)).toBe(true);
      expect(again.headers.get('content-type')).toBe(first.headers.get('content-type'));
    },
  },
  {
    case: 'a body that is not UTF-8 replays byte for byte',
    pglite: true,
    async run(app) {
      const key = sf(freshKey('binary'));
      const body = { item: freshKey('binary-item'), behaviour: 'binary' };
      const first = await postOrder(app.url, { key, body });
      const again = await postOrder(app.url, { key, body });
      expect(first.bytes.subarray(0, 4)).toEqual(Buffer.from([0xff, 0x00, 0xfe, 0x80]));
      expect(again.bytes.equals(first.bytes)).toBe(true);
      expect(again.headers.get('content-type')).toBe('application/octet-stream');
      expect(again.headers.get('idempotent-replayed')).toBe('true');
    },
  },
  {
    case: 'a 204 without a body replays as a 204 without a body',
    route: { replayHeaders: ['location'] },
    async run(app) {
      const key = sf(freshKey('no-content'));
      const body = { item: freshKey('no-content-item'), behaviour: 'no-content' };
      const first = await postOrder(app.url, { key, body });
      const again = await postOrder(app.url, { key, body });
      expect([first.status, again.status]).toEqual([204, 204]);
      expect(again.bytes.length).toBe(0);
      expect(again.headers.get('location')).toBe(first.headers.get('location'));
      expect(again.headers.get('idempotent-replayed')).toBe('true');
    },
  },
];
