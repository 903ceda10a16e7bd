/**
 * The actions as a script calls them (docs/dashboard.md, "Actions for scripts"): real HTTP
 * requests with a Bearer token to `serveDashboard` over a real PostgreSQL store, with dead
 * letters from a real inbox, dead outbox events from the real relay and a record stuck in a
 * real operation. With `Accept: application/json` each action answers what it did as JSON;
 * without it, a 303 to the page that shows it.
 */
import {
  createInbox,
  createMemoryPublisher,
  createOperations,
  createOutbox,
  createRelay,
  rowsOf,
  type Envelope,
  type Relay,
} from '@justonce/core';
import { serveDashboard, type ServedDashboard } from '@justonce/dashboard';
import { waitFor } from '../../../test-support/wait-for';
import { freshStore, type TestStore } from './fixtures';

const TOKEN = 'operator-token-for-action-tests';

let t: TestStore;
let served: ServedDashboard;
let relay: Relay;
let origin: string;

interface Answer {
  readonly status: number;
  readonly location: string | null;
  readonly body: Record<string, unknown>;
}

/** A POST as a script sends it: the Bearer token, a form body, JSON asked for unless `page`. */
async function act(
  path: string,
  fields: Record<string, string | string[]> = {},
  options: { page?: boolean; token?: string } = {},
): Promise<Answer> {
  const form = new URLSearchParams();
  for (const [name, value] of Object.entries(fields)) {
    for (const item of Array.isArray(value) ? value : [value]) form.append(name, item);
  }
  const response = await fetch(`${origin}${path}`, {
    method: 'POST',
    redirect: 'manual',
    headers: {
      authorization: `Bearer ${options.token ?? TOKEN}`,
      'content-type': 'application/x-www-form-urlencoded',
      ...(options.page === true ? {} : { accept: 'application/json' }),
    },
    body: form,
  });
  const text = await response.text();
  return {
    status: response.status,
    location: response.headers.get('location'),
    body: options.page === true ? {} : (JSON.parse(text) as Record<string, unknown>),
  };
}

/** A dead letter of `consumer` for `envelope`, refused by its handler; gives its id. */
async function deadLetter(consumer: string, envelope: Envelope): Promise<string> {
  const inbox = createInbox({ store: t.store, consumer, classify: () => 'non-retriable' });
  await inbox.process(envelope, async () => {
    throw new Error('refused for the test');
  });
  const letters = await t.admin.deadLetters.list({ consumer, includeRequeued: true });
  return letters.find((l) => l.messageId === (envelope.id ?? null))!.id;
}

/** The outbox row ids of a message id, whatever their status. */
async function outboxRowsOf(messageId: string): Promise<string[]> {
  const result = await t.store.knex.raw(
    `select id::text as id from ${t.store.names.table('outbox')} where message_id = ?`,
    [messageId],
  );
  return rowsOf<{ id: string }>(result).map((row) => row.id);
}

beforeAll(async () => {
  t = await freshStore('dash_actions');
  served = await serveDashboard({ admin: t.admin, token: TOKEN, port: 0 });
  origin = served.url.replace(/\/$/, '');
});

afterAll(async () => {
  await served?.close();
  await relay?.stop();
  await t?.close();
});

describe('dead letters', () => {
  it('requeue answers the outbox row; requeueing it again replaces that row with a new one', async () => {
    const id = await deadLetter('payments', {
      id: 'pay-1',
      headers: {},
      body: '{"amount":1}',
      delivery: { source: 'payments' },
    });
    const first = await act(`/dead-letters/${id}/requeue`);
    expect(first.status).toBe(200);
    expect(first.body).toEqual({
      done: 'requeued',
      what: 'dead-letter',
      n: 1,
      failed: 0,
      outboxId: expect.stringMatching(/^\d+$/),
    });
    expect(await outboxRowsOf('pay-1')).toEqual([first.body['outboxId']]);
    const requeuedAt = (await t.admin.deadLetters.get(id))!.requeuedAt!;

    // Already requeued: allowed, and its pending row is replaced, not doubled.
    const again = await act(`/dead-letters/${id}/requeue`);
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ done: 'requeued', n: 1, failed: 0 });
    expect(again.body['outboxId']).not.toBe(first.body['outboxId']);
    expect(await outboxRowsOf('pay-1')).toEqual([again.body['outboxId']]);
    expect((await t.admin.deadLetters.get(id))!.requeuedAt!.getTime()).toBeGreaterThanOrEqual(
      requeuedAt.getTime(),
    );

    // Without JSON asked for: a 303 to the letter's page with the notice.
    const page = await act(`/dead-letters/${id}/requeue`, {}, { page: true });
    expect(page.status).toBe(303);
    expect(page.location).toBe(`/dead-letters/${id}?done=requeued&what=dead-letter&n=1`);
  });

  it('refusals: no destination known 400, no message id 409, unknown 404, each with its code', async () => {
    const nowhere = await deadLetter('nowhere', {
      id: 'nw-1',
      headers: {},
      body: 'x',
      delivery: {},
    });
    const refused = await act(`/dead-letters/${nowhere}/requeue`);
    expect(refused.status).toBe(400);
    expect(refused.body).toEqual({
      error: { status: 400, code: 'INVALID_CONFIG', message: expect.stringMatching(/destination/) },
    });
    expect((await t.admin.deadLetters.get(nowhere))!.requeuedAt).toBeNull();
    const sent = await act(`/dead-letters/${nowhere}/requeue`, { destination: 'elsewhere' });
    expect(sent).toMatchObject({ status: 200, body: { n: 1, failed: 0 } });
    expect((await t.admin.outbox.get(sent.body['outboxId'] as string))?.destination).toBe(
      'elsewhere',
    );

    const anonymous = await deadLetter('anonymous', {
      id: undefined,
      headers: {},
      body: 'x',
      delivery: { source: 'q' },
    });
    const noId = await act(`/dead-letters/${anonymous}/requeue`);
    expect(noId.status).toBe(409);
    expect(noId.body['error']).toMatchObject({ code: 'DEAD_LETTER_NOT_REDELIVERABLE' });

    const unknown = await act('/dead-letters/999999999/requeue');
    expect(unknown.status).toBe(404);
    expect(unknown.body['error']).toMatchObject({ code: 'DEAD_LETTER_NOT_FOUND' });
  });

  it('delete answers 200, then 409 once it is gone; bulk counts what it could not change', async () => {
    const ids: string[] = [];
    for (const n of [1, 2, 3]) {
      ids.push(
        await deadLetter('emails', { id: `mail-${n}`, headers: {}, body: 'x', delivery: {} }),
      );
    }
    const deleted = await act(`/dead-letters/${ids[0]}/delete`);
    expect(deleted).toMatchObject({
      status: 200,
      body: { done: 'deleted', what: 'dead-letter', n: 1, failed: 0 },
    });
    const gone = await act(`/dead-letters/${ids[0]}/delete`);
    expect(gone).toMatchObject({ status: 409, body: { done: 'deleted', n: 0, failed: 1 } });

    const bulk = await act('/dead-letters/bulk', { action: 'delete', id: ids });
    expect(bulk).toMatchObject({ status: 200, body: { done: 'deleted', n: 2, failed: 1 } });
    const page = await act(
      '/dead-letters/bulk',
      { action: 'delete', id: ids, back: 'consumer=emails' },
      { page: true },
    );
    expect(page.location).toBe(
      '/dead-letters?consumer=emails&done=deleted&what=dead-letter&n=0&failed=3',
    );
    const bad = await act('/dead-letters/bulk', { action: 'drop', id: ids });
    expect(bad).toMatchObject({
      status: 400,
      body: { error: { status: 400, message: 'action must be requeue or delete' } },
    });
  });
});

describe('outbox events', () => {
  it('requeue a dead event (a new row), delete, and 409 for an event not in a state for it', async () => {
    const publisher = createMemoryPublisher();
    const heal = publisher.failKey('k-dead', { retriable: false, message: 'unroutable' });
    await t.store.knex.transaction(async (trx) => {
      await createOutbox({ store: t.store }).add(trx, [
        { destination: 'orders', key: 'k-dead', messageId: 'evt-dead', payload: { n: 1 } },
        { destination: 'orders', key: 'k-dead', messageId: 'evt-dead-2', payload: { n: 2 } },
      ]);
    });
    relay = createRelay({ store: t.store, publisher, pollIntervalMs: 100 });
    await relay.start();
    await waitFor(
      'two dead events',
      async () => (await t.admin.outbox.list({ status: 'dead' })).length === 2,
    );
    await relay.stop();
    heal();
    const [dead] = await outboxRowsOf('evt-dead');
    const requeued = await act(`/outbox/${dead}/requeue`);
    expect(requeued).toMatchObject({
      status: 200,
      body: { done: 'requeued', what: 'outbox-event', n: 1, failed: 0 },
    });
    const pending = requeued.body['outboxId'] as string;
    expect((await t.admin.outbox.get(pending))?.status).toBe('pending');
    // Pending, not dead: nothing to requeue.
    expect(await act(`/outbox/${pending}/requeue`)).toMatchObject({
      status: 409,
      body: { n: 0, failed: 1 },
    });
    expect(await act(`/outbox/${pending}/delete`)).toMatchObject({
      status: 200,
      body: { done: 'deleted', what: 'outbox-event', n: 1 },
    });
    const [other] = await outboxRowsOf('evt-dead-2');
    const page = await act(`/outbox/${other}/requeue`, {}, { page: true });
    expect(page.status).toBe(303);
    expect(page.location).toMatch(/^\/outbox\/\d+\?done=requeued&what=outbox-event&n=1$/);
  });
});

describe('operations', () => {
  it('release a record past its lease; one in its lease only with force', async () => {
    const ops = createOperations({ store: t.store, operation: 'charge', leaseMs: 300 });
    await ops.reserve('k-past', { n: 1 });
    await new Promise((resolve) => setTimeout(resolve, 500));
    const released = await act('/operations/release', { operation: 'charge', key: 'k-past' });
    expect(released).toMatchObject({
      status: 200,
      body: { done: 'released', what: 'record', n: 1, failed: 0 },
    });

    const held = createOperations({ store: t.store, operation: 'charge', leaseMs: 60_000 });
    await held.reserve('k-held', { n: 2 });
    const refused = await act('/operations/release', { operation: 'charge', key: 'k-held' });
    expect(refused).toMatchObject({ status: 409, body: { n: 0, failed: 1 } });
    const forced = await act('/operations/release', {
      operation: 'charge',
      key: 'k-held',
      force: '1',
    });
    expect(forced).toMatchObject({ status: 200, body: { n: 1 } });
    expect(await act('/operations/release', { operation: 'charge' })).toMatchObject({
      status: 400,
      body: { error: { message: 'operation and key are required' } },
    });
  });
});

describe('refusals as JSON', () => {
  it('a wrong token is 401, no token 403, with the reason', async () => {
    const wrong = await act('/dead-letters/1/delete', {}, { token: 'not-the-operator-token' });
    expect(wrong).toMatchObject({ status: 401, body: { error: { status: 401 } } });
    const response = await fetch(`${origin}/dead-letters/1/delete`, {
      method: 'POST',
      headers: { accept: 'application/json', origin },
    });
    expect(response.status).toBe(403);
    expect(await response.json()).toEqual({
      error: { status: 403, message: 'Log in with the operator token first.' },
    });
  });
});
