/** An SQS handler: consumed from a real queue (ElasticMQ), named after the queue. */
import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { defineMessage, MESSAGE_TYPE_HEADER, type MessageData } from '@justonce/core';
import { z } from 'zod';
import { JustonceModule, JustonceRuntime, OnMessage, type MessageContext } from '../src';
import { waitFor } from '../../../test-support/wait-for';
import { sqsEndpoint } from '../../../test-support/services';
import { sqsClientConfig, TestQueues, unique } from '../../sqs/test/support';
import { testSchema } from './support';

const Shipped = defineMessage({ type: 'order.shipped', schema: z.object({ id: z.string() }) });
const queues = new TestQueues();
const queueName = unique('nest-shipped');
// ElasticMQ's queue URLs: the endpoint, its account, the name (checked when it is created).
const queueUrl = `${sqsEndpoint()}/000000000000/${queueName}`;
let table = '';

@Injectable()
class Notifier {
  @OnMessage(Shipped, { transport: 'sqs', queue: queueUrl })
  async onShipped(order: MessageData<typeof Shipped>, { trx }: MessageContext): Promise<void> {
    await trx(table).insert({ id: order.id });
  }
}

let db: Awaited<ReturnType<typeof testSchema>>;

beforeAll(async () => {
  db = await testSchema('sqs');
  table = `${db.schema}.notices`;
  await db.store.knex.raw(`create table ${table} (id text primary key)`);
  expect(await queues.create(queueName)).toBe(queueUrl);
});

afterAll(async () => {
  await queues.dispose();
  await db.dispose();
});

it('consumes an SQS queue through the inbox', async () => {
  const moduleRef = await Test.createTestingModule({
    imports: [
      JustonceModule.forRoot({
        store: db.store,
        transports: { sqs: { clientConfig: sqsClientConfig(), waitTimeSeconds: 1 } },
      }),
    ],
    providers: [Notifier],
  }).compile();
  const app = moduleRef.createNestApplication({ logger: false });
  await app.init();
  try {
    expect([...app.get(JustonceRuntime).consumers.keys()]).toEqual([queueName]);
    const id = randomUUID();
    await queues.send(queueUrl, [
      {
        body: JSON.stringify({ id }),
        attributes: { [MESSAGE_TYPE_HEADER]: Shipped.type, 'message-id': id },
      },
    ]);
    await waitFor('the notice', async () => db.store.knex(table).where({ id }).first());
  } finally {
    await app.close();
  }
});
