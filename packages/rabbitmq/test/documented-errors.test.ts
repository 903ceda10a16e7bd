import { createInbox, createStore, type OutgoingMessage, type Store } from '@justonce/core';
import { RabbitConnectionError, createRabbitConsumer, createRabbitPublisher } from '../src';

/**
 * The README's `RabbitConnectionError` (`RABBIT_CONNECTION`), where it says: `start()` rejects
 * with it when the first connection fails, and a publish that cannot reach the broker reports
 * it, retriable, for every message. No broker is needed: the connection is refused.
 */

/** Nothing listens on port 1: the connection is refused at once. */
const UNREACHABLE = 'amqp://guest:guest@127.0.0.1:1';

let store: Store;

beforeAll(async () => {
  // The consumer never reaches its inbox here; a lazily connecting store is enough.
  store = await createStore({ connectionString: 'postgres://127.0.0.1:1/none' });
});

afterAll(async () => {
  await store.close();
});

describe('RabbitConnectionError', () => {
  it.each([
    ['a url nobody listens on', { url: UNREACHABLE }],
    [
      'a connect function that fails',
      {
        connect: async (): Promise<never> => {
          throw new Error('ECONNREFUSED');
        },
      },
    ],
  ])('start() rejects with it when the first connection fails (%s)', async (_what, how) => {
    const consumer = createRabbitConsumer({
      ...how,
      queue: 'jobs',
      inbox: createInbox({ store, consumer: 'jobs' }),
      handler: async () => undefined,
    });
    const caught: unknown = await consumer.start().catch((error: unknown) => error);
    await consumer.stop();
    expect(caught).toBeInstanceOf(RabbitConnectionError);
    expect(caught).toMatchObject({ code: 'RABBIT_CONNECTION', retriable: true });
  });

  it('fails every message of a publish that cannot reach the broker, retriable', async () => {
    const publisher = createRabbitPublisher({ url: UNREACHABLE });
    const messages: OutgoingMessage[] = ['a', 'b'].map((id) => ({
      messageId: id,
      destination: 'jobs',
      key: null,
      headers: {},
      payload: new Uint8Array([1]),
    }));
    const results = await publisher.publish(messages);
    await publisher.close();
    expect(results).toHaveLength(2);
    for (const [i, result] of results.entries()) {
      expect(result).toMatchObject({
        messageId: messages[i]!.messageId,
        ok: false,
        retriable: true,
      });
      if (!result.ok) {
        expect(result.error).toBeInstanceOf(RabbitConnectionError);
        expect(result.error).toMatchObject({ code: 'RABBIT_CONNECTION' });
      }
    }
  });
});
