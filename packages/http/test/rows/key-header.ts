/**
 * The rows of the semantics table (docs/http.md) about the Idempotency-Key field itself and
 * the scope: what is refused before the handler runs, for each adapter.
 */
import { freshKey, postOrder, postWithKeyLines, sf } from '../support/client';
import { expectProblem } from '../support/expect-problem';
import type { Row } from '../support/harness';
import { countOrders } from '../support/orders';

export const KEY_HEADER_ROWS: readonly Row[] = [
  {
    case: 'key required and absent: 400 idempotency-key-missing, handler not run',
    pglite: true,
    async run(app, env) {
      const item = freshKey('absent');
      const response = await postOrder(app.url, { body: { item } });
      expectProblem(response, 400, 'keyMissing');
      expect(await countOrders(env, item)).toBe(0);
    },
  },
  {
    case: 'empty value or "": 400 idempotency-key-malformed',
    async run(app) {
      for (const key of ['""', ' ']) {
        expectProblem(await postOrder(app.url, { key, body: { item: 'x' } }), 400, 'keyMalformed');
      }
    },
  },
  {
    case: 'several values (two field lines, or a list): 400 idempotency-key-malformed',
    async run(app, env) {
      const item = freshKey('several');
      const lines = await postWithKeyLines(app.url, [sf(freshKey()), sf(freshKey())], { item });
      expectProblem(lines, 400, 'keyMalformed');
      const list = await postOrder(app.url, {
        key: `${sf(freshKey())}, ${sf(freshKey())}`,
        body: { item },
      });
      expectProblem(list, 400, 'keyMalformed');
      const bare = await postOrder(app.url, {
        key: `${freshKey()}, ${freshKey()}`,
        body: { item },
      });
      expectProblem(bare, 400, 'keyMalformed');
      expect(await countOrders(env, item)).toBe(0);
    },
  },
  {
    case: 'not a Structured Field string: 400 idempotency-key-malformed',
    async run(app) {
      for (const key of ['"unterminated', '"a\\b"', '"a"b']) {
        expectProblem(await postOrder(app.url, { key, body: { item: 'x' } }), 400, 'keyMalformed');
      }
    },
  },
  {
    case: 'a control character: 400 idempotency-key-malformed',
    async run(app) {
      for (const key of ['ab\tcd', '"ab\tcd"']) {
        expectProblem(await postOrder(app.url, { key, body: { item: 'x' } }), 400, 'keyMalformed');
      }
    },
  },
  {
    case: 'longer than maxKeyLength: 400 idempotency-key-malformed',
    route: { maxKeyLength: 16 },
    async run(app, env) {
      const item = freshKey('long');
      for (const key of [sf('k'.repeat(17)), 'k'.repeat(17)]) {
        expectProblem(await postOrder(app.url, { key, body: { item } }), 400, 'keyMalformed');
      }
      expect(await countOrders(env, item)).toBe(0);
      const longest = freshKey('x').slice(-16).padStart(16, 'k');
      expect((await postOrder(app.url, { key: sf(longest), body: { item } })).status).toBe(201);
    },
  },
  {
    case: 'scope finds no client: 401 idempotency-scope-missing, handler not run',
    async run(app, env) {
      const item = freshKey('anonymous');
      const response = await postOrder(app.url, {
        key: sf(freshKey()),
        client: null,
        body: { item },
      });
      expectProblem(response, 401, 'noScope');
      expect(await countOrders(env, item)).toBe(0);
    },
  },
  {
    case: "the same key from another client: that client's own first request",
    pglite: true,
    async run(app, env) {
      const key = sf(freshKey('scoped'));
      const item = freshKey('scoped-item');
      const a = await postOrder(app.url, { key, client: 'client-a', body: { item } });
      const b = await postOrder(app.url, { key, client: 'client-b', body: { item } });
      expect([a.status, b.status]).toEqual([201, 201]);
      expect(b.headers.get('idempotent-replayed')).toBeNull();
      expect(b.json).not.toEqual(a.json);
      expect(await countOrders(env, item)).toBe(2);
      const againB = await postOrder(app.url, { key, client: 'client-b', body: { item } });
      expect(againB.headers.get('idempotent-replayed')).toBe('true');
      expect(againB.bytes.equals(b.bytes)).toBe(true);
    },
  },
  {
    case: "scope 'shared': one key space for every client",
    route: { scope: 'shared', operation: 'create-order-shared' },
    async run(app, env) {
      const key = sf(freshKey('shared'));
      const item = freshKey('shared-item');
      const a = await postOrder(app.url, { key, client: 'client-a', body: { item } });
      const b = await postOrder(app.url, { key, client: null, body: { item } });
      expect(a.status).toBe(201);
      expect(b.headers.get('idempotent-replayed')).toBe('true');
      expect(await countOrders(env, item)).toBe(1);
    },
  },
  {
    case: 'key optional and absent: the handler runs in a plain transaction, never replayed',
    pglite: true,
    route: { required: false, operation: 'create-order-optional' },
    async run(app, env) {
      const item = freshKey('optional');
      const first = await postOrder(app.url, { body: { item } });
      const second = await postOrder(app.url, { body: { item } });
      expect([first.status, second.status]).toEqual([201, 201]);
      expect(second.headers.get('idempotent-replayed')).toBeNull();
      expect(await countOrders(env, item)).toBe(2);
      const failed = await postOrder(app.url, { body: { item, behaviour: 'server-error' } });
      expect(failed.status).toBe(503);
      expect(await countOrders(env, item)).toBe(2);
    },
  },
  {
    case: 'key optional and present: as on a route that requires it',
    route: { required: false, operation: 'create-order-optional' },
    async run(app, env) {
      const key = sf(freshKey('optional-keyed'));
      const item = freshKey('optional-keyed-item');
      const first = await postOrder(app.url, { key, body: { item } });
      const second = await postOrder(app.url, { key, body: { item } });
      expect(second.headers.get('idempotent-replayed')).toBe('true');
      expect(second.bytes.equals(first.bytes)).toBe(true);
      expect(await countOrders(env, item)).toBe(1);
    },
  },
];
