/**
 * Fifty requests with one key at once, for each adapter on PostgreSQL: exactly one runs the
 * handler (one order row, one outbox event); the others get its stored response or 409,
 * or, with `inProgress.waitMs`, all fifty get the same 201 body.
 */
import { ADAPTERS } from './support/adapters';
import { freshKey, postOrder, sf, type Received } from './support/client';
import { openApps } from './support/harness';
import { countEvents, countOrders } from './support/orders';

const CONCURRENT = 50;

function burst(url: string, key: string, item: string): Promise<Received[]> {
  return Promise.all(
    Array.from({ length: CONCURRENT }, () =>
      postOrder(url, { key: sf(key), body: { item, delayMs: 100 } }),
    ),
  );
}

const apps = openApps();

describe.each(ADAPTERS.map((adapter) => [adapter.name, adapter] as const))(
  '%s',
  (_name, adapter) => {
    it(`${CONCURRENT} requests with one key: one order, one event, one 201, the rest replays or 409`, async () => {
      const app = await apps.app(adapter, {});
      const key = freshKey('burst');
      const item = freshKey('burst-item');
      const responses = await burst(app.url, key, item);

      const first = responses.filter(
        (r) => r.status === 201 && r.headers.get('idempotent-replayed') === null,
      );
      const replays = responses.filter((r) => r.headers.get('idempotent-replayed') === 'true');
      const busy = responses.filter((r) => r.status === 409);
      expect(first).toHaveLength(1);
      expect(replays.length + busy.length).toBe(CONCURRENT - 1);
      for (const replay of replays) {
        expect(replay.status).toBe(201);
        expect(replay.bytes.equals(first[0]?.bytes ?? Buffer.alloc(0))).toBe(true);
      }
      expect(apps.env().runs.get(key)).toBe(1);
      expect(await countOrders(apps.env(), item)).toBe(1);
      expect(await countEvents(apps.env(), item)).toBe(1);
    });

    it(`${CONCURRENT} requests with one key and inProgress.waitMs: ${CONCURRENT} identical 201 bodies`, async () => {
      const app = await apps.app(adapter, {
        route: { inProgress: { waitMs: 20_000 }, operation: 'create-order-waiting' },
      });
      const key = freshKey('burst-wait');
      const item = freshKey('burst-wait-item');
      const responses = await burst(app.url, key, item);

      expect(responses.map((r) => r.status)).toEqual(Array(CONCURRENT).fill(201));
      const bodies = new Set(responses.map((r) => r.bytes.toString('base64')));
      expect(bodies.size).toBe(1);
      expect(responses.filter((r) => r.headers.get('idempotent-replayed') === null)).toHaveLength(
        1,
      );
      expect(apps.env().runs.get(key)).toBe(1);
      expect(await countOrders(apps.env(), item)).toBe(1);
      expect(await countEvents(apps.env(), item)).toBe(1);
    });
  },
);
