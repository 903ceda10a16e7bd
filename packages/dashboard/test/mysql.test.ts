/**
 * The dashboard over a MySQL store (MariaDB in the test setup), through the same admin API:
 * its pages read what the real inbox and outbox wrote there, and an action a script sends with
 * the Bearer token changes it. The pages' markup and the actions' other cases are PostgreSQL's
 * tests (mount, actions, browser); here, that each read and one change work on MySQL.
 */
import { createInbox, createOutbox } from '@justonce/core';
import { serveDashboard, type ServedDashboard } from '@justonce/dashboard';
import { freshStore, type TestStore } from './fixtures';

const TOKEN = 'operator-token-for-mysql-tests';

let t: TestStore;
let served: ServedDashboard;
let origin: string;
let letterId: string;

/** The page at `path`, which must answer 200. */
async function page(path: string): Promise<string> {
  const response = await fetch(`${origin}${path}`);
  expect(response.status).toBe(200);
  return response.text();
}

beforeAll(async () => {
  t = await freshStore('dash_my', 'mysql');
  // `s-1` delivered twice: one handled, one duplicate; `b-1` refused: a dead letter.
  const shipping = createInbox({ store: t.store, consumer: 'shipping' });
  for (const id of ['s-1', 's-1']) {
    await shipping.process({ id, headers: {}, body: '{}', delivery: {} }, async () => 'ok');
  }
  await shipping.flushActivity();
  const billing = createInbox({ store: t.store, consumer: 'billing', maxAttempts: 1 });
  await billing.process(
    { id: 'b-1', headers: {}, body: '{"amount":42}', delivery: { source: 'payments' } },
    async () => {
      throw new Error('card declined');
    },
  );
  const [letter] = await t.admin.deadLetters.list({ consumer: 'billing' });
  letterId = letter!.id;
  const outbox = createOutbox({ store: t.store });
  await t.store.knex.transaction((trx) =>
    outbox.add(trx, { destination: 'orders', payload: { n: 1 }, messageId: 'o-1' }),
  );
  served = await serveDashboard({ admin: t.admin, token: TOKEN, port: 0 });
  origin = served.url.replace(/\/$/, '');
});

afterAll(async () => {
  await served?.close();
  await t?.close();
});

describe('the dashboard on MySQL', () => {
  it('the overview counts the consumer’s handled and duplicate deliveries', async () => {
    const overview = await page('/');
    expect(overview).toContain('<h1>Overview</h1>');
    expect(overview).toMatch(
      /<td>shipping<\/td>\s*<td class="n">1<\/td>\s*<td class="n">1<\/td>\s*<td class="n">0<\/td>/,
    );
  });

  it('lists the dead letter and shows its body and error', async () => {
    expect(await page('/dead-letters')).toContain('b-1');
    const shown = await page(`/dead-letters/${letterId}`);
    expect(shown).toContain('card declined');
    expect(shown).toMatch(
      /<pre id="body" data-kind="json">\{\n {2}&quot;amount&quot;: 42\n\}<\/pre>/,
    );
  });

  it('lists the pending event; a script deletes it with the token', async () => {
    const [event] = await t.admin.outbox.list({ status: 'pending' });
    expect(event?.messageId).toBe('o-1');
    expect(await page('/outbox?status=pending')).toContain('o-1');
    const deleted = await fetch(`${origin}/outbox/${event!.id}/delete`, {
      method: 'POST',
      redirect: 'manual',
      headers: { authorization: `Bearer ${TOKEN}`, accept: 'application/json' },
    });
    expect(deleted.status).toBe(200);
    expect(await deleted.json()).toMatchObject({ done: 'deleted', n: 1 });
    expect(await t.admin.outbox.get(event!.id)).toBeUndefined();
  });
});
