import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createOutbox, createStore, rowsOf, type Store } from '../src';
import {
  createOrderKeys,
  createOrdersApp,
  createOrdersTables,
} from '../../../examples/order-service/orders/app';

/** The example's orders API over real HTTP, on PGlite: what a client gets for a bad request. */
describe('order-service: the orders API', () => {
  let store: Store;
  let server: Server;
  let url: string;
  const errors: unknown[] = [];
  let thrown = false;

  beforeAll(async () => {
    store = await createStore({ pglite: {} });
    await store.migrate();
    await createOrdersTables(store);
    const app = createOrdersApp({
      store,
      operations: createOrderKeys(store),
      outbox: createOutbox({ store }),
      topic: 'order.created',
      onError: (error) => errors.push(error),
      onWritten: (order) => {
        if (order.customerId !== 'c-throw' || thrown) return;
        thrown = true;
        throw new Error('the order could not be written: secret');
      },
    });
    server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/orders`;
  });

  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
    await store.close();
  });

  const post = (body: string, key: string): Promise<Response> =>
    fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': key },
      body,
    });

  const orders = async (): Promise<number> =>
    Number(
      rowsOf<{ n: number }>(
        await store.knex.raw(`select count(*)::int as n from ${store.names.table('orders')}`),
      )[0]?.n,
    );

  it('answers 400 problem+json to a body that is not JSON, writes nothing and reports no server error', async () => {
    const response = await post('{"customerId": "c-1", ', 'key-malformed');
    expect(response.status).toBe(400);
    expect(response.headers.get('content-type')).toBe('application/problem+json');
    const text = await response.text();
    expect(JSON.parse(text)).toEqual({
      type: 'about:blank',
      title: 'Bad Request',
      status: 400,
      detail: expect.any(String),
    });
    expect(text).not.toMatch(/SyntaxError|position|node_modules/);
    expect(await orders()).toBe(0);
    expect(errors).toEqual([]);
  });

  it('answers 400 with the issues to JSON that is no order, and 201 to an order', async () => {
    const invalid = await post(JSON.stringify({ customerId: 'c-1' }), 'key-invalid');
    expect(invalid.status).toBe(400);
    expect(await invalid.json()).toMatchObject({ title: 'invalid order' });

    const body = JSON.stringify({ customerId: 'c-1', amountCents: 1200, currency: 'EUR' });
    const created = await post(body, 'key-good');
    expect(created.status).toBe(201);
    expect(await orders()).toBe(1);
    expect(errors).toEqual([]);
  });

  it('answers a thrown error with a 500 problem telling nothing of it; the retry creates the order', async () => {
    const before = await orders();
    const body = JSON.stringify({ customerId: 'c-throw', amountCents: 500, currency: 'EUR' });
    const failed = await post(body, 'key-throw');
    expect(failed.status).toBe(500);
    expect(failed.headers.get('content-type')).toBe('application/problem+json');
    const text = await failed.text();
    expect(JSON.parse(text)).toMatchObject({ status: 500, title: 'The request failed' });
    expect(text).not.toMatch(/secret|Error|node_modules/);
    expect(errors.map((error) => (error as Error).message)).toEqual([
      'the order could not be written: secret',
    ]);
    expect(await orders()).toBe(before);

    const retried = await post(body, 'key-throw');
    expect(retried.status).toBe(201);
    expect(await orders()).toBe(before + 1);
    errors.length = 0;
  });
});
