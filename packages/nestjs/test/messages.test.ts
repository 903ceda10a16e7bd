/**
 * @OnMessage handlers on a real RabbitMQ: an order placed over HTTP goes through the outbox
 * and the module's relay to a queue, and the handler gets it typed and writes in ctx.trx;
 * and a graceful shutdown lets the delivery in flight finish and settle.
 */
import { randomUUID } from 'node:crypto';
import { Body, Controller, Inject, Injectable, Post } from '@nestjs/common';
import { connect, type Channel, type ChannelModel } from 'amqplib';
import { defineMessage, MESSAGE_TYPE_HEADER, type MessageData, type Outbox } from '@justonce/core';
import { createRabbitPublisher } from '@justonce/rabbitmq';
import type { Knex } from 'knex';
import { z } from 'zod';
import {
  Idempotent,
  IdempotencyTransaction,
  InjectOutbox,
  JustonceModule,
  JustonceRuntime,
  OnMessage,
  type MessageContext,
} from '../src';
import { waitFor } from '../../../test-support/wait-for';
import { amqpUrl, boot, databaseUrl, gate, testSchema, uniqueName } from './support';

const ordersQueue = uniqueName('nest-orders');
const slowQueue = uniqueName('nest-slow');

const OrderPlaced = defineMessage({
  type: 'order.placed',
  schema: z.object({ id: z.string(), cents: z.number().int() }),
  destination: ordersQueue,
});
const SlowJob = defineMessage({ type: 'slow.job', schema: z.object({ n: z.number() }) });

const SCHEMA = 'test:schema';

@Controller('orders')
class OrdersController {
  constructor(@InjectOutbox() private readonly outbox: Outbox) {}

  @Post()
  @Idempotent({ operation: 'place-order', scope: 'shared' })
  async place(@Body() body: { cents: number }, @IdempotencyTransaction() trx: Knex.Transaction) {
    const order = { id: randomUUID(), cents: body.cents };
    await this.outbox.add(trx, OrderPlaced, order);
    return order;
  }
}

@Injectable()
class Billing {
  constructor(@Inject(SCHEMA) private readonly schema: string) {}

  @OnMessage(OrderPlaced, { transport: 'rabbitmq', queue: ordersQueue })
  async onOrder(order: MessageData<typeof OrderPlaced>, ctx: MessageContext): Promise<void> {
    // Typed: `order.cents` is a number by the schema.
    await ctx.trx(`${this.schema}.invoices`).insert({
      order_id: order.id,
      cents: order.cents + 0,
      message_id: ctx.messageId,
    });
  }
}

/** Gates of the slow handler, replaced per test. */
const slow = { started: gate(), release: gate(), finished: [] as number[] };

@Injectable()
class SlowWorker {
  constructor(@Inject(SCHEMA) private readonly schema: string) {}

  @OnMessage(SlowJob, { transport: 'rabbitmq', queue: slowQueue, consumer: 'slow-worker' })
  async work(job: MessageData<typeof SlowJob>, { trx }: MessageContext): Promise<void> {
    slow.started.open();
    await slow.release.promise;
    await trx(`${this.schema}.jobs`).insert({ n: job.n });
    slow.finished.push(Date.now());
  }
}

let db: Awaited<ReturnType<typeof testSchema>>;
let amqp: ChannelModel;
let channel: Channel;

beforeAll(async () => {
  db = await testSchema('msg');
  const schema = () => db.store.knex.schema.withSchema(db.schema);
  await schema().createTable('invoices', (table) => {
    table.text('order_id').primary();
    table.integer('cents').notNullable();
    table.text('message_id').notNullable();
  });
  await schema().createTable('jobs', (table) => table.integer('n').notNullable());
  amqp = await connect(amqpUrl());
  channel = await amqp.createChannel();
});

afterAll(async () => {
  for (const queue of [ordersQueue, slowQueue]) {
    await channel.deleteQueue(queue);
    await channel.deleteQueue(`${queue}.dead`);
    await channel.deleteExchange(`${queue}.dlx`);
  }
  await amqp.close();
  await db.dispose();
});

function rabbitModule(): ReturnType<typeof JustonceModule.forRoot> {
  return JustonceModule.forRoot({
    store: { connectionString: databaseUrl(), schema: db.schema },
    transports: { rabbitmq: { url: amqpUrl() } },
    relays: [{ publisher: createRabbitPublisher({ url: amqpUrl() }), pollIntervalMs: 100 }],
    shutdown: { timeoutMs: 10_000 },
  });
}

it('delivers an order placed over HTTP, through the outbox and the relay, to a typed handler', async () => {
  const { app, url } = await boot('express', {
    imports: [rabbitModule()],
    controllers: [OrdersController],
    providers: [Billing, { provide: SCHEMA, useValue: db.schema }],
  });
  try {
    const consumers = app.get(JustonceRuntime).consumers;
    expect([...consumers.keys()]).toEqual([ordersQueue]);
    const response = await fetch(`${url}/orders`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': randomUUID() },
      body: JSON.stringify({ cents: 4200 }),
    });
    expect(response.status).toBe(201);
    const order = (await response.json()) as { id: string };
    const invoice = await waitFor('the invoice', async () =>
      db.store.knex(`${db.schema}.invoices`).where({ order_id: order.id }).first(),
    );
    expect(invoice).toMatchObject({ cents: 4200 });
    const [event] = await db.store.knex
      .raw(`select count(*) as n from ${db.store.names.table('outbox')}`)
      .then((result: { rows: { n: string }[] }) => result.rows);
    expect(Number(event?.n)).toBe(0); // published and deleted by the relay
  } finally {
    await app.close();
  }
});

it('lets a slow handler in flight finish and settle when the application closes', async () => {
  const { app } = await boot('fastify', {
    imports: [rabbitModule()],
    providers: [SlowWorker, { provide: SCHEMA, useValue: db.schema }],
  });
  const n = Math.floor(Math.random() * 1_000_000);
  channel.sendToQueue(slowQueue, Buffer.from(JSON.stringify({ n })), {
    messageId: randomUUID(),
    headers: { [MESSAGE_TYPE_HEADER]: SlowJob.type },
  });
  await slow.started.promise;
  const closing = app.close().then(() => Date.now());
  await new Promise((resolve) => setTimeout(resolve, 300));
  slow.release.open();
  const closedAt = await closing;
  expect(slow.finished).toHaveLength(1);
  expect(slow.finished[0]).toBeLessThanOrEqual(closedAt);
  expect(await db.store.knex(`${db.schema}.jobs`).where({ n })).toHaveLength(1);
  // Acknowledged before the connection closed: nothing is left to redeliver.
  expect((await channel.checkQueue(slowQueue)).messageCount).toBe(0);
});
