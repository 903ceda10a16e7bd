/**
 * @Idempotent routes on real Nest applications, on Express and on Fastify: one order row and
 * one outbox event per key, byte-for-byte replays, the problems of docs/http.md, and fifty
 * requests with one key at once.
 */
import { randomUUID } from 'node:crypto';
import {
  Body,
  ConflictException,
  Controller,
  Inject,
  Injectable,
  Post,
  UseInterceptors,
  type CallHandler,
  type NestInterceptor,
} from '@nestjs/common';
import { map, type Observable } from 'rxjs';
import { defineMessage, type Outbox, type Store } from '@justonce/core';
import type { Knex } from 'knex';
import { z } from 'zod';
import {
  Idempotent,
  IdempotencyKey,
  IdempotencyTransaction,
  InjectOutbox,
  JustonceModule,
} from '../src';
import { boot, databaseUrl, PLATFORMS, testSchema, type RunningApp } from './support';

const OrderPlaced = defineMessage({
  type: 'order.placed',
  schema: z.object({ id: z.string(), item: z.string() }),
  destination: 'orders',
  key: (order) => order.item,
});

const SCHEMA = 'test:schema';

/** Changes the handler's response: it must run inside @Idempotent, so that it is stored. */
@Injectable()
class Stamp implements NestInterceptor {
  intercept(_context: unknown, next: CallHandler): Observable<unknown> {
    return next.handle().pipe(map((value: object) => ({ ...value, stamped: true })));
  }
}

@Controller('orders')
class OrdersController {
  constructor(
    @InjectOutbox() private readonly outbox: Outbox,
    @Inject(SCHEMA) private readonly schema: string,
  ) {}

  @Post()
  @Idempotent({ operation: 'place-order' })
  async place(
    @Body() body: { item: string },
    @IdempotencyTransaction() trx: Knex.Transaction,
    @IdempotencyKey() key: string,
  ): Promise<{ id: string; item: string; key: string }> {
    if (body.item === 'refused') throw new ConflictException('refused');
    const order = { id: randomUUID(), item: body.item };
    await trx(`${this.schema}.orders`).insert(order);
    await this.outbox.add(trx, OrderPlaced, order);
    return { ...order, key };
  }

  // Listed above @Idempotent: applied after it, so it runs inside it.
  @Post('stamped')
  @UseInterceptors(Stamp)
  @Idempotent({ operation: 'stamp' })
  async stamped(@Body() body: { item: string }): Promise<{ item: string }> {
    return { item: body.item };
  }
}

let db: Awaited<ReturnType<typeof testSchema>>;

beforeAll(async () => {
  db = await testSchema('http');
  await db.store.knex.schema.withSchema(db.schema).createTable('orders', (table) => {
    table.text('id').primary();
    table.text('item').notNullable();
  });
});

afterAll(async () => {
  await db.dispose();
});

async function post(
  app: RunningApp,
  body: unknown,
  key: string | undefined,
  path = '/orders',
): Promise<{ status: number; headers: Headers; text: string }> {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'x-client-id': 'c1',
  };
  if (key !== undefined) headers['idempotency-key'] = key;
  const response = await fetch(`${app.url}${path}`, {
    method: 'POST',
    headers,
    body: JSON.stringify(body),
  });
  return { status: response.status, headers: response.headers, text: await response.text() };
}

async function counts(store: Store, item: string): Promise<{ orders: number; events: number }> {
  const [orders] = await store.knex(`${db.schema}.orders`).where({ item }).count({ n: '*' });
  const events = await store.knex.raw(
    `select count(*) as n from ${store.names.table('outbox')} where partition_key = ?`,
    [item],
  );
  return { orders: Number(orders?.n), events: Number(events.rows[0].n) };
}

describe.each(PLATFORMS)('on %s', (platform) => {
  let app: RunningApp;

  beforeAll(async () => {
    app = await boot(platform, {
      imports: [
        JustonceModule.forRoot({
          store: { connectionString: databaseUrl(), schema: db.schema },
          idempotency: { scope: (request) => request.headers['x-client-id'] as string },
        }),
      ],
      controllers: [OrdersController],
      providers: [{ provide: SCHEMA, useValue: db.schema }],
    });
  });

  afterAll(async () => {
    await app.app.close();
  });

  it('runs the first request once: one row, one outbox event, 201 without the replay header', async () => {
    const item = `book-${platform}-${randomUUID()}`;
    const first = await post(app, { item }, randomUUID());
    expect(first.status).toBe(201);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    expect(JSON.parse(first.text)).toMatchObject({ item });
    expect(await counts(db.store, item)).toEqual({ orders: 1, events: 1 });
  });

  it('replays the stored status and exact body, marked Idempotent-Replayed', async () => {
    const item = `pen-${platform}-${randomUUID()}`;
    const key = randomUUID();
    const first = await post(app, { item }, key);
    const again = await post(app, { item }, key);
    expect(again.status).toBe(201);
    expect(again.text).toBe(first.text);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.headers.get('content-type')).toBe(first.headers.get('content-type'));
    expect(await counts(db.store, item)).toEqual({ orders: 1, events: 1 });
  });

  it('answers 400 problem+json to a request without a key, and runs nothing', async () => {
    const item = `cup-${platform}-${randomUUID()}`;
    const response = await post(app, { item }, undefined);
    expect(response.status).toBe(400);
    expect(response.headers.get('content-type')).toBe('application/problem+json');
    expect(JSON.parse(response.text)).toMatchObject({
      type: 'urn:justonce:problem:idempotency-key-missing',
      status: 400,
    });
    expect(await counts(db.store, item)).toEqual({ orders: 0, events: 0 });
  });

  it('answers 422 to the same key with another body', async () => {
    const key = randomUUID();
    const item = `lamp-${platform}-${randomUUID()}`;
    expect((await post(app, { item }, key)).status).toBe(201);
    const other = await post(app, { item: `${item}-other` }, key);
    expect(other.status).toBe(422);
    expect(JSON.parse(other.text)).toMatchObject({
      type: 'urn:justonce:problem:idempotency-key-reused',
    });
    expect(await counts(db.store, `${item}-other`)).toEqual({ orders: 0, events: 0 });
  });

  it('rolls back a handler that throws, answers through the exception filter, and frees the key', async () => {
    const key = randomUUID();
    const refused = await post(app, { item: 'refused' }, key);
    expect(refused.status).toBe(409);
    expect(JSON.parse(refused.text)).toMatchObject({ message: 'refused' });
    expect(await counts(db.store, 'refused')).toEqual({ orders: 0, events: 0 });
    expect((await post(app, { item: 'refused' }, key)).status).toBe(409); // runs again
  });

  it('gives fifty requests with one key one row and one event', async () => {
    const key = randomUUID();
    const item = `desk-${platform}-${randomUUID()}`;
    const responses = await Promise.all(Array.from({ length: 50 }, () => post(app, { item }, key)));
    const statuses = responses.map((response) => response.status);
    expect(statuses.every((status) => status === 201 || status === 409)).toBe(true);
    const created = responses.filter((response) => response.status === 201);
    expect(created.filter((r) => r.headers.get('idempotent-replayed') === null)).toHaveLength(1);
    expect(new Set(created.map((response) => response.text)).size).toBe(1);
    expect(await counts(db.store, item)).toEqual({ orders: 1, events: 1 });
  });

  it('stores what the interceptors inside it made of the response', async () => {
    const key = randomUUID();
    const first = await post(app, { item: 'ink' }, key, '/orders/stamped');
    const again = await post(app, { item: 'ink' }, key, '/orders/stamped');
    expect(JSON.parse(first.text)).toEqual({ item: 'ink', stamped: true });
    expect(again.text).toBe(first.text);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
  });
});
