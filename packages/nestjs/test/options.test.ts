/** Bad options, of the module, of a handler or of a route, are a ConfigurationError at boot. */
import { Controller, Injectable, Post, type Type } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { ConfigurationError, defineMessage, type Store } from '@justonce/core';
import { z } from 'zod';
import { Idempotent, JustonceModule, OnMessage } from '../src';
import { databaseUrl, testSchema } from './support';

const PaymentRequested = defineMessage({
  type: 'payment.requested',
  schema: z.object({ id: z.string() }),
});

@Injectable()
class QueueHandler {
  @OnMessage(PaymentRequested, { transport: 'rabbitmq', queue: 'payments' })
  async handle(): Promise<void> {}
}

@Injectable()
class KafkaHandler {
  @OnMessage(PaymentRequested, { transport: 'kafka', topic: 'payments' })
  async handle(): Promise<void> {}
}

@Controller()
class BadRoute {
  @Post()
  @Idempotent({ operation: 'x', scope: 'shared', retentionMS: 5 } as never)
  async post(): Promise<void> {}
}

@Injectable()
class SameTypeTwice {
  @OnMessage(PaymentRequested, { transport: 'rabbitmq', queue: 'twice' })
  async one(): Promise<void> {}
  @OnMessage(PaymentRequested, { transport: 'rabbitmq', queue: 'twice' })
  async two(): Promise<void> {}
}

@Injectable()
class TwoNames {
  @OnMessage(PaymentRequested, { transport: 'rabbitmq', queue: 'q', consumer: 'a' })
  async one(): Promise<void> {}
  @OnMessage(defineMessage({ type: 'other', schema: z.object({}) }), {
    transport: 'rabbitmq',
    queue: 'q',
    consumer: 'b',
  })
  async two(): Promise<void> {}
}

describe('bad options are a ConfigurationError at boot', () => {
  let db: Awaited<ReturnType<typeof testSchema>>;
  beforeAll(async () => {
    db = await testSchema('bad');
  });
  afterAll(async () => {
    await db.dispose();
  });

  /** Boots a module with `options` and `extra` providers; resolves to what the boot threw. */
  async function refusal(
    options: () => ReturnType<typeof JustonceModule.forRoot>,
    providers: Type[] = [],
    controllers: Type[] = [],
  ): Promise<unknown> {
    try {
      const moduleRef = await Test.createTestingModule({
        imports: [options()],
        providers,
        controllers,
      }).compile();
      const app = moduleRef.createNestApplication({ logger: false });
      try {
        await app.init();
      } finally {
        await app.close();
      }
    } catch (error) {
      return error;
    }
    throw new Error('expected the boot to fail');
  }

  const store = (): Store => db.store;

  it.each([
    [
      'an unknown option',
      () => JustonceModule.forRoot({ store: store(), migrat: true } as never),
      /did you mean `migrate`/,
    ],
    [
      'a bad migrate',
      () => JustonceModule.forRoot({ store: store(), migrate: 'yes' } as never),
      /migrate must be a boolean/,
    ],
    [
      'store options createStore refuses',
      () => JustonceModule.forRoot({ store: { conectionString: databaseUrl() } as never }),
      /did you mean `connectionString`/,
    ],
    [
      'a relay without a publisher',
      () => JustonceModule.forRoot({ store: store(), relays: [{}] as never }),
      /relays\[0\] needs a publisher/,
    ],
    [
      'an unknown option of a consumer',
      () => JustonceModule.forRoot({ store: store(), consumers: { a: { inbx: {} } } as never }),
      /consumers.a.inbx/,
    ],
    [
      'a factory returning a bad option',
      () =>
        JustonceModule.forRootAsync({
          useFactory: () => ({ store: store(), shutdown: { timeoutMs: -1 } }),
        }),
      /shutdown.timeoutMs/,
    ],
  ])('%s', async (_case, options, message) => {
    const error = await refusal(options);
    expect(error).toBeInstanceOf(ConfigurationError);
    expect((error as Error).message).toMatch(message);
  });

  it.each([
    ['a handler on a transport without settings', [KafkaHandler], [], /no transports.kafka/],
    [
      'a route with an unknown option',
      [],
      [BadRoute],
      /@Idempotent on BadRoute.post.*did you mean `retentionMs`/,
    ],
    ['one queue under two consumer names', [TwoNames], [], /two consumer names/],
    ['one message type twice in a consumer', [SameTypeTwice], [], /consumer "twice":.*two routes/],
  ] as const)('%s', async (_case, providers, controllers, message) => {
    const error = await refusal(
      () =>
        JustonceModule.forRoot({
          store: store(),
          transports: { rabbitmq: { url: 'amqp://127.0.0.1' } },
        }),
      [...providers],
      [...controllers],
    );
    expect(error).toBeInstanceOf(ConfigurationError);
    expect((error as Error).message).toMatch(message);
  });

  it('refuses an unknown option of forRootAsync at once', () => {
    expect(() =>
      JustonceModule.forRootAsync({ useFactory: () => ({ store: store() }), injects: [] } as never),
    ).toThrow(/did you mean `inject`/);
  });

  it('refuses transport settings the transport refuses', async () => {
    const error = await refusal(
      () =>
        JustonceModule.forRoot({
          store: store(),
          transports: { rabbitmq: { url: 'amqp://127.0.0.1', prefech: 1 } as never },
        }),
      [QueueHandler],
    );
    expect(error).toBeInstanceOf(ConfigurationError);
    expect((error as Error).message).toMatch(/did you mean `prefetch`/);
  });
});
