/**
 * Kafka handlers: two `@OnMessage` handlers on two topics, with no consumer name, are one
 * consumer in the group `transports.kafka.groupId`, subscribed to both topics.
 */
import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { Kafka, logLevel } from 'kafkajs';
import { defineMessage, MESSAGE_TYPE_HEADER, type MessageData } from '@justonce/core';
import { z } from 'zod';
import { JustonceModule, JustonceRuntime, OnMessage, type MessageContext } from '../src';
import { kafkaBrokers } from '../../../test-support/services';
import { waitFor } from '../../../test-support/wait-for';
import { FAST_GROUP } from '../../kafka/test/fast-group';
import { testSchema, uniqueName } from './support';

const ordersTopic = uniqueName('nest-orders');
const refundsTopic = uniqueName('nest-refunds');
const groupId = uniqueName('nest-billing');

const OrderPlaced = defineMessage({ type: 'order.placed', schema: z.object({ id: z.string() }) });
const RefundIssued = defineMessage({ type: 'refund.issued', schema: z.object({ id: z.string() }) });

let table = '';

@Injectable()
class Ledger {
  @OnMessage(OrderPlaced, { transport: 'kafka', topic: ordersTopic })
  async onOrder(order: MessageData<typeof OrderPlaced>, { trx }: MessageContext): Promise<void> {
    await trx(table).insert({ id: order.id, kind: 'order' });
  }

  @OnMessage(RefundIssued, { transport: 'kafka', topic: refundsTopic })
  async onRefund(refund: MessageData<typeof RefundIssued>, { trx }: MessageContext): Promise<void> {
    await trx(table).insert({ id: refund.id, kind: 'refund' });
  }
}

const kafka = new Kafka({
  brokers: kafkaBrokers(),
  clientId: 'nest-test',
  logLevel: logLevel.NOTHING,
});
const admin = kafka.admin();
let db: Awaited<ReturnType<typeof testSchema>>;

beforeAll(async () => {
  db = await testSchema('kafka');
  table = `${db.schema}.ledger`;
  await db.store.knex.raw(`create table ${table} (id text primary key, kind text not null)`);
  await admin.connect();
  await admin.createTopics({
    waitForLeaders: true,
    topics: [ordersTopic, refundsTopic].map((topic) => ({ topic, numPartitions: 1 })),
  });
});

afterAll(async () => {
  await admin.deleteTopics({ topics: [ordersTopic, refundsTopic] }).catch(() => undefined);
  await admin.disconnect();
  await db.dispose();
});

it('runs the handlers of two topics as one consumer of the group', async () => {
  const moduleRef = await Test.createTestingModule({
    imports: [
      JustonceModule.forRoot({
        store: db.store,
        transports: {
          kafka: {
            brokers: kafkaBrokers(),
            groupId,
            fromBeginning: true,
            consumerConfig: FAST_GROUP,
          },
        },
      }),
    ],
    providers: [Ledger],
  }).compile();
  const app = moduleRef.createNestApplication({ logger: false });
  await app.init();
  const producer = kafka.producer();
  try {
    const consumers = app.get(JustonceRuntime).consumers;
    expect([...consumers.values()]).toEqual([
      expect.objectContaining({
        name: groupId,
        transport: 'kafka',
        sources: [ordersTopic, refundsTopic],
      }),
    ]);
    await producer.connect();
    const [order, refund] = [randomUUID(), randomUUID()];
    for (const [topic, type, id] of [
      [ordersTopic, OrderPlaced.type, order],
      [refundsTopic, RefundIssued.type, refund],
    ] as const) {
      await producer.send({
        topic,
        messages: [
          {
            value: JSON.stringify({ id }),
            headers: { [MESSAGE_TYPE_HEADER]: type, 'message-id': id },
          },
        ],
      });
    }
    const rows = await waitFor(
      'both rows',
      async () => {
        const found = await db.store.knex(table).orderBy('kind');
        return found.length === 2 ? found : undefined;
      },
      { timeoutMs: 30_000 },
    );
    expect(rows).toEqual([
      { id: order, kind: 'order' },
      { id: refund, kind: 'refund' },
    ]);
  } finally {
    await producer.disconnect();
    await app.close();
  }
});
