/**
 * The module built by forRootAsync's factory: the providers it exports, forFeature's
 * operations, and the memory broker standing in for RabbitMQ (outbox → relay → @OnMessage).
 */
import { Injectable, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import {
  defineMessage,
  MESSAGE_TYPE_HEADER,
  type MessageData,
  type Operations,
  type Outbox,
  type Store,
} from '@justonce/core';
import { createMemoryBroker } from '@justonce/core/testing';
import { z } from 'zod';
import {
  getOperationsToken,
  InjectOperations,
  InjectOutbox,
  InjectStore,
  JustonceModule,
  JustonceRuntime,
  OnMessage,
  type JustonceModuleOptions,
  type MessageContext,
} from '../src';
import { testSchema } from './support';

const PaymentRequested = defineMessage({
  type: 'payment.requested',
  schema: z.object({ id: z.string(), cents: z.number().int() }),
  destination: 'payments',
});

const SETTINGS = 'test:settings';
/** The table the payments handler writes, in the test's schema. */
let paymentsTable = 'payments';

@Module({
  providers: [{ provide: SETTINGS, useValue: { consumer: 'payments' } }],
  exports: [SETTINGS],
})
class SettingsModule {}

@Injectable()
class Checkout {
  constructor(
    @InjectStore() private readonly store: Store,
    @InjectOutbox() private readonly outbox: Outbox,
    @InjectOperations() readonly operations: Operations,
  ) {}

  request(id: string, cents: number): Promise<string> {
    return this.store.knex.transaction((trx) =>
      this.outbox.add(trx, PaymentRequested, { id, cents }),
    );
  }
}

@Injectable()
class Payments {
  @OnMessage(PaymentRequested, { transport: 'rabbitmq', queue: 'payments' })
  async onRequest(
    payment: MessageData<typeof PaymentRequested>,
    { trx, messageId }: MessageContext,
  ) {
    await trx(paymentsTable).insert({
      id: payment.id,
      cents: payment.cents,
      message_id: messageId,
    });
  }
}

@Module({
  imports: [JustonceModule.forFeature({ operations: ['charge-card'] })],
  providers: [Checkout, Payments],
})
class PaymentsModule {}

describe('forRootAsync', () => {
  it('builds the module from a factory, provides its objects, and runs handlers on the memory broker', async () => {
    const { store, schema, dispose } = await testSchema('async');
    paymentsTable = `${schema}.payments`;
    await store.knex.raw(
      `create table ${paymentsTable} (id text primary key, cents int, message_id text)`,
    );
    const broker = createMemoryBroker();
    const moduleRef = await Test.createTestingModule({
      imports: [
        JustonceModule.forRootAsync({
          imports: [SettingsModule],
          inject: [SETTINGS],
          useFactory: (settings: { consumer: string }): JustonceModuleOptions => ({
            store,
            transports: { memory: { broker, replaces: ['rabbitmq'] } },
            consumers: { [settings.consumer]: { inbox: { maxAttempts: 3 } } },
            relays: [{ publisher: broker.publisher(), pollIntervalMs: 20 }],
          }),
        }),
        PaymentsModule,
      ],
    }).compile();
    const app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    try {
      const consumer = app.get(JustonceRuntime).consumers.get('payments');
      expect(consumer).toMatchObject({ transport: 'memory', sources: ['payments'] });
      const messageId = await app.get(Checkout).request('p-1', 990);
      await waitForRow(store, 'p-1');
      await broker.whenIdle();
      expect(await store.knex(paymentsTable)).toEqual([
        { id: 'p-1', cents: 990, message_id: messageId },
      ]);

      // Two copies of one message: one effect, the second answered as a duplicate.
      const headers = { [MESSAGE_TYPE_HEADER]: PaymentRequested.type };
      const body = JSON.stringify({ id: 'p-2', cents: 10 });
      broker.send('payments', [
        { id: 'm-2', headers, body },
        { id: 'm-2', headers, body },
      ]);
      await broker.whenIdle();
      expect(broker.stats('payments').duplicates).toBe(1);
      expect(await store.knex(paymentsTable).where({ id: 'p-2' })).toHaveLength(1);

      const charges = app.get<Operations>(getOperationsToken('charge-card'));
      const charge = () =>
        charges.run('k-1', { cents: 990 }, async () => ({ charge: Math.random() }));
      expect(await charge()).toEqual(await charge());
      expect(app.get(Checkout).operations).toBe(app.get(getOperationsToken()));
    } finally {
      await app.close();
    }
    // The module does not close a store it was given.
    expect((await store.knex.raw('select 1 as one')).rows).toEqual([{ one: 1 }]);
    await dispose();
    await broker.close();
  });
});

async function waitForRow(store: Store, id: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while ((await store.knex(paymentsTable).where({ id })).length === 0) {
    if (Date.now() > deadline) throw new Error(`no payment ${id}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
