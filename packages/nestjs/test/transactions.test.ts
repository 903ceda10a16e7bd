/**
 * The module with another library's transactions (node-postgres here, through core's pg
 * adapter): the @Idempotent route and the @OnMessage handler each get a pg client in its
 * transaction, and the outbox writes in it.
 */
import { randomUUID } from 'node:crypto';
import { Body, Controller, Inject, Injectable, Post } from '@nestjs/common';
import { Pool, type PoolClient } from 'pg';
import { defineMessage, type MessageData, type Outbox } from '@justonce/core';
import { createMemoryBroker, type MemoryBroker } from '@justonce/core/testing';
import { z } from 'zod';
import {
  Idempotent,
  IdempotencyTransaction,
  InjectOutbox,
  JustonceModule,
  OnMessage,
  type MessageContext,
} from '../src';
import { pgTransactions } from '../../core/src/adapters/pg';
import { waitFor } from '../../../test-support/wait-for';
import { boot, databaseUrl, testSchema } from './support';

const OrderPlaced = defineMessage({
  type: 'order.placed',
  schema: z.object({ id: z.string(), item: z.string() }),
  destination: 'orders',
});
const SCHEMA = 'test:schema';

@Controller('orders')
class OrdersController {
  constructor(
    @InjectOutbox() private readonly outbox: Outbox<PoolClient>,
    @Inject(SCHEMA) private readonly schema: string,
  ) {}

  @Post()
  @Idempotent({ operation: 'place-order', scope: 'shared', required: false })
  async place(@Body() body: { item: string }, @IdempotencyTransaction() client: PoolClient) {
    const order = { id: randomUUID(), item: body.item };
    await client.query(`insert into ${this.schema}.orders (id, item) values ($1, $2)`, [
      order.id,
      order.item,
    ]);
    await this.outbox.add(client, OrderPlaced, order);
    return order;
  }
}

@Injectable()
class Shipping {
  constructor(@Inject(SCHEMA) private readonly schema: string) {}

  @OnMessage(OrderPlaced, { transport: 'memory', queue: 'orders' })
  async onOrder(order: MessageData<typeof OrderPlaced>, ctx: MessageContext<PoolClient>) {
    await ctx.trx.query(`insert into ${this.schema}.shipments (order_id) values ($1)`, [order.id]);
  }
}

let db: Awaited<ReturnType<typeof testSchema>>;
let pool: Pool;
let broker: MemoryBroker;

beforeAll(async () => {
  db = await testSchema('pg');
  await db.store.knex.raw(
    `create table ${db.schema}.orders (id text primary key, item text not null);
     create table ${db.schema}.shipments (order_id text primary key)`,
  );
  pool = new Pool({ connectionString: databaseUrl(), max: 5 });
  broker = createMemoryBroker();
});

afterAll(async () => {
  await broker.close();
  await pool.end();
  await db.dispose();
});

it('hands the route and the handler a pg client in their transactions', async () => {
  const { app, url } = await boot('fastify', {
    imports: [
      JustonceModule.forRoot({
        store: db.store,
        transactions: pgTransactions(pool),
        transports: { memory: { broker } },
        relays: [{ publisher: broker.publisher(), pollIntervalMs: 20 }],
      }),
    ],
    controllers: [OrdersController],
    providers: [Shipping, { provide: SCHEMA, useValue: db.schema }],
  });
  try {
    const key = randomUUID();
    const post = () =>
      fetch(`${url}/orders`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'idempotency-key': key },
        body: JSON.stringify({ item: 'lamp' }),
      });
    const first = await post();
    const again = await post();
    expect(first.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    const order = (await first.json()) as { id: string };
    expect(await again.json()).toEqual(order);
    // The key is optional on this route: a keyless request runs in a pg transaction too.
    const keyless = await fetch(`${url}/orders`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ item: 'desk' }),
    });
    expect(keyless.status).toBe(201);
    await waitFor('the shipment', async () =>
      db.store.knex(`${db.schema}.shipments`).where({ order_id: order.id }).first(),
    );
    expect(await db.store.knex(`${db.schema}.orders`).orderBy('item', 'desc')).toEqual([
      { id: order.id, item: 'lamp' },
      { id: ((await keyless.json()) as { id: string }).id, item: 'desk' },
    ]);
  } finally {
    await app.close();
  }
});
