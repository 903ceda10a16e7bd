import { createInbox, createStore, resolveMeter, silentLogger, type Store } from '@justonce/core';
import {
  createRabbitConsumer,
  createRabbitPublisher,
  type RabbitConsumerOptions,
  type RabbitPublisherOptions,
} from '../src';
import { refusal } from '../../../test-support/refusal';

/**
 * Both factories of the package refuse an option their interface does not declare, naming it
 * and the closest known one, and still take every option they document. Nothing here connects:
 * a consumer connects on `start`, a publisher on its first `publish`.
 */

/** The message part naming `key` and suggesting `suggestion`. */
const named = (key: string, suggestion: string): string =>
  `unknown option \`${key}\`; did you mean \`${suggestion}\`?`;

/** Bypasses the option types, as a JavaScript caller (or a cast) would. */
function loose<T>(options: Record<string, unknown>): T {
  return options as T;
}

const URL = 'amqp://guest:guest@127.0.0.1:1';
const neverConnects = (): never => {
  throw new Error('not connected in this test');
};

let store: Store;

beforeAll(async () => {
  // Construction never touches the database; a lazily connecting store is enough.
  store = await createStore({ connectionString: 'postgres://127.0.0.1:1/none' });
});

afterAll(async () => {
  await store.close();
});

/** Every option but `connect` (which excludes `url`). */
function allConsumerOptions(): Omit<Required<RabbitConsumerOptions>, 'connect'> {
  return {
    url: URL,
    connectionName: 'rabbit-options',
    heartbeatSeconds: 10,
    connectTimeoutMs: 1_000,
    operationTimeoutMs: 1_000,
    queue: 'jobs',
    handler: async () => undefined,
    inbox: createInbox({ store, consumer: 'jobs-consumer', decode: (body) => body }),
    messageId: { header: 'x-id', extract: () => undefined, fallback: false },
    scopeHeader: 'x-tenant',
    prefetch: 10,
    concurrency: 2,
    mode: 'batch',
    batchSize: 5,
    batchWaitMs: 2,
    // `delaysMs` excludes `backoff`; it is taken below, with a ready inbox.
    retry: { backoff: (attempt) => attempt * 100, ladderMs: [100, 1_000] },
    deadLetter: { exchange: 'jobs.dlx', exchangeType: 'topic', queue: null },
    declareTopology: false,
    durable: false,
    queueArguments: { 'x-queue-type': 'quorum' },
    confirmTimeoutMs: 1_000,
    reconnect: { baseMs: 10, capMs: 100 },
    storeRetry: { baseMs: 10, capMs: 100 },
    logger: silentLogger,
    meter: resolveMeter(),
    onSettled: () => undefined,
    onConnection: () => undefined,
    resilience: {
      budget: { ratio: 0.1, spentDelayMs: 10_000 },
      breaker: { trip: { failureRatio: 0.5 }, key: (e) => e.scope ?? '' },
    },
  };
}

describe('createRabbitConsumer', () => {
  it('refuses misspelt options, nested ones with their path', () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ prefech: 10 }, named('prefech', 'prefetch')],
      [{ batchsize: 10 }, named('batchsize', 'batchSize')],
      [{ deadLeter: {} }, named('deadLeter', 'deadLetter')],
      [{ deadLetter: { qeue: null } }, named('deadLetter.qeue', 'deadLetter.queue')],
      [{ messageId: { heder: 'x' } }, named('messageId.heder', 'messageId.header')],
      [{ retry: { ladderMS: [1] } }, named('retry.ladderMS', 'retry.ladderMs')],
      [{ reconnect: { capMS: 100 } }, named('reconnect.capMS', 'reconnect.capMs')],
      [{ storeRetry: { baseMS: 100 } }, named('storeRetry.baseMS', 'storeRetry.baseMs')],
      [{ connectTimeoutMS: 100 }, named('connectTimeoutMS', 'connectTimeoutMs')],
      [
        { resilience: { budget: { ratoi: 0.1 } } },
        named('resilience.budget.ratoi', 'resilience.budget.ratio'),
      ],
    ];
    for (const [change, message] of cases) {
      const options = loose<RabbitConsumerOptions>({ ...allConsumerOptions(), ...change });
      expect(refusal(() => createRabbitConsumer(options)).message).toBe(
        `createRabbitConsumer: ${message}`,
      );
    }
  });

  it('refuses the names of before the shared consumer shape', () => {
    for (const old of [
      'store',
      'consumer',
      'decode',
      'deadLetterExchange',
      'deadLetterExchangeType',
      'deadLetterQueue',
      'messageIdExtractor',
      'scopeExtractor',
      'shutdownTimeoutMs',
      'onEvent',
    ]) {
      const options = loose<RabbitConsumerOptions>({ ...allConsumerOptions(), [old]: undefined });
      expect(refusal(() => createRabbitConsumer(options)).message).toMatch(
        new RegExp(`^createRabbitConsumer: unknown option \`${old}\``),
      );
    }
    const maxAttempts = loose<RabbitConsumerOptions>({
      ...allConsumerOptions(),
      retry: { maxAttempts: 3 },
    });
    expect(refusal(() => createRabbitConsumer(maxAttempts)).message).toMatch(
      /unknown option `retry.maxAttempts`/,
    );
  });

  it('takes every option it documents', async () => {
    const built = createRabbitConsumer(allConsumerOptions());
    expect(built.connected).toBe(false);
    await built.stop();
    const { url: _url, ...rest } = allConsumerOptions();
    const ready = createRabbitConsumer({
      ...rest,
      connect: neverConnects,
      retry: { delaysMs: [100, 1_000] },
    });
    expect(ready.topology().queue).toBe('jobs');
    await ready.stop();
  });
});

describe('createRabbitPublisher', () => {
  it('refuses a misspelt option', () => {
    const error = refusal(() => createRabbitPublisher(loose({ url: URL, persistant: true })));
    expect(error.message).toBe(`createRabbitPublisher: ${named('persistant', 'persistent')}`);
    const nested = refusal(() =>
      createRabbitPublisher(loose({ url: URL, reconnect: { capMS: 100 } })),
    );
    expect(nested.message).toBe(
      `createRabbitPublisher: ${named('reconnect.capMS', 'reconnect.capMs')}`,
    );
  });

  it('takes every option it documents', async () => {
    const all: Omit<Required<RabbitPublisherOptions>, 'connect'> = {
      url: URL,
      connectionName: 'relay',
      heartbeatSeconds: 10,
      connectTimeoutMs: 1_000,
      operationTimeoutMs: 1_000,
      confirmTimeoutMs: 1_000,
      persistent: false,
      exchangeCheckTtlMs: 1_000,
      reconnect: { baseMs: 10, capMs: 100 },
      logger: silentLogger,
    };
    await createRabbitPublisher(all).close();
    const { url: _url, ...rest } = all;
    await createRabbitPublisher({ ...rest, connect: neverConnects }).close();
  });
});

describe('options that are not an object', () => {
  it('are refused with a ConfigurationError by every factory, never met with a TypeError', () => {
    const factories = { createRabbitConsumer, createRabbitPublisher };
    for (const factory of Object.values(factories)) {
      for (const value of [undefined, null, 42, []]) {
        const error = refusal(() => (factory as (options: unknown) => unknown)(value));
        expect(error.code).toBe('INVALID_CONFIG');
      }
    }
  });
});

describe('options of the wrong kind', () => {
  const consumerWith = (change: Record<string, unknown>): RabbitConsumerOptions =>
    loose<RabbitConsumerOptions>({ ...allConsumerOptions(), ...change });

  it('refuse a logger without the four methods, in both factories', () => {
    for (const logger of [{}, { debug: () => undefined }, 'console']) {
      for (const build of [
        () => createRabbitConsumer(consumerWith({ logger })),
        () => createRabbitPublisher(loose({ url: URL, logger })),
      ]) {
        expect(refusal(build).message).toBe('logger must have debug, info, warn and error methods');
      }
    }
  });

  it('refuse a backoff whose cap is below its base, naming the option', () => {
    const backoff = { baseMs: 1_000, capMs: 10 };
    const cases: Array<[() => unknown, string]> = [
      [() => createRabbitConsumer(consumerWith({ reconnect: backoff })), 'reconnect'],
      [() => createRabbitConsumer(consumerWith({ storeRetry: backoff })), 'storeRetry'],
      // The default cap (5 000 ms) stands in for one not given.
      [() => createRabbitConsumer(consumerWith({ storeRetry: { baseMs: 6_000 } })), 'storeRetry'],
      [() => createRabbitPublisher({ url: URL, reconnect: backoff }), 'reconnect'],
    ];
    for (const [build, what] of cases) {
      const error = refusal(build);
      expect(error.message).toBe(`${what}.capMs must not be below ${what}.baseMs`);
      expect(error.code).toBe('INVALID_CONFIG');
    }
    // The bounds stay positive integers: a base of 0 would retry without pause.
    expect(
      refusal(() => createRabbitConsumer(consumerWith({ reconnect: { baseMs: 0 } }))).message,
    ).toBe('reconnect.baseMs must be a positive integer');
  });

  it('refuse a queue name its retry queues cannot extend, naming its own limit', async () => {
    const suffix = '.retry.2147483647ms';
    expect(255 - Buffer.byteLength(suffix)).toBe(236);
    for (const bytes of [237, 251, 255, 300]) {
      const error = refusal(() => createRabbitConsumer(consumerWith({ queue: 'q'.repeat(bytes) })));
      expect(error.message).toBe(
        `queue must be at most 236 bytes: its retry queues add \`${suffix}\` within AMQP's 255`,
      );
    }
    // Bytes, not characters: 118 two-byte letters are 236 bytes, one more is too many.
    refusal(() => createRabbitConsumer(consumerWith({ queue: 'é'.repeat(119) })));
    const longest = createRabbitConsumer(
      consumerWith({ queue: 'é'.repeat(118), deadLetter: undefined }),
    );
    expect(longest.topology().queue).toBe('é'.repeat(118));
    await longest.stop();
  });
});
