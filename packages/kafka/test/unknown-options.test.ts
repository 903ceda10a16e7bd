import { createInbox, createStore, silentLogger, type Store } from '@justonce/core';
import {
  createKafkaConsumer,
  createKafkaPublisher,
  kafkajsClient,
  type KafkaConsumerOptions,
  type KafkaProducerClient,
  type KafkaPublisherOptions,
} from '../src';
import { refusal } from '../../../test-support/refusal';

/**
 * Every factory of the package refuses an option its interface does not declare, naming it
 * and the closest known one, and still takes every option it documents. Nothing here connects.
 */

/** The message part naming `key` and suggesting `suggestion`. */
const named = (key: string, suggestion: string): string =>
  `unknown option \`${key}\`; did you mean \`${suggestion}\`?`;

/** Bypasses the option types, as a JavaScript caller (or a cast) would. */
function loose<T>(options: Record<string, unknown>): T {
  return options as T;
}

const BROKERS = ['127.0.0.1:1'];

/** A producer that is never used: the consumers and publishers here are never started. */
const idleProducer: KafkaProducerClient = {
  connect: async () => undefined,
  disconnect: async () => undefined,
  send: async () => [],
};

let store: Store;

beforeAll(async () => {
  // Construction never touches the database; a lazily connecting store is enough.
  store = await createStore({ connectionString: 'postgres://127.0.0.1:1/none' });
});

afterAll(async () => {
  await store.close();
});

/** Every option but `brokers`, `client` and `timeouts` (which exclude `kafka`). */
function allConsumerOptions(): Omit<
  Required<KafkaConsumerOptions>,
  'brokers' | 'client' | 'timeouts'
> {
  return {
    inbox: createInbox({ store, consumer: 'kafka-options', dedup: 'watermark' }),
    handler: async () => undefined,
    groupId: 'g',
    topics: ['t', /^t-.*/],
    kafka: kafkajsClient({ brokers: BROKERS }),
    clientId: 'client',
    mode: 'message',
    batchSize: 10,
    fromBeginning: true,
    dedup: 'watermark',
    concurrency: 2,
    messageId: { header: 'id', extract: () => undefined, fallback: false },
    scopeHeader: 'tenant',
    deadLetter: { topic: 't.dlq', producer: idleProducer },
    consumerConfig: {
      sessionTimeout: 30_000,
      rebalanceTimeout: 60_000,
      heartbeatInterval: 3_000,
      maxWaitTimeInMs: 1_000,
      maxBytesPerPartition: 1_048_576,
      maxBytes: 10_485_760,
      allowAutoTopicCreation: false,
      retry: { retries: 3, initialRetryTime: 100, maxRetryTime: 1_000 },
    },
    onSettled: () => undefined,
    resilience: {
      budget: { ratio: 0.1, minRetriesPerSecond: 1, windowMs: 5_000, spentDelayMs: 10_000 },
      breaker: { trip: { consecutiveFailures: 3 }, openMs: 5_000, key: (e) => e.scope ?? '' },
      onEvent: () => undefined,
    },
    logger: silentLogger,
  };
}

describe('createKafkaConsumer', () => {
  it('refuses misspelt options, nested ones with their path', () => {
    const { kafka: _kafka, ...base } = allConsumerOptions();
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ batchsize: 10 }, named('batchsize', 'batchSize')],
      [{ messageId: { fallbak: false } }, named('messageId.fallbak', 'messageId.fallback')],
      // The options renamed in 0.2 are refused, not silently ignored.
      [{ messageId: { fallbackToOffset: false } }, 'unknown option `messageId.fallbackToOffset`'],
      [{ deadLetterTopic: 't.dlq' }, 'unknown option `deadLetterTopic`'],
      [{ onOutcome: () => undefined }, 'unknown option `onOutcome`'],
      [{ partitionsConsumedConcurrently: 2 }, 'unknown option `partitionsConsumedConcurrently`'],
      [{ deadLetter: { topik: 't.dlq' } }, named('deadLetter.topik', 'deadLetter.topic')],
      [
        { consumerConfig: { sessiontimeout: 30_000 } },
        named('consumerConfig.sessiontimeout', 'consumerConfig.sessionTimeout'),
      ],
      [
        { consumerConfig: { retry: { retrys: 3 } } },
        named('consumerConfig.retry.retrys', 'consumerConfig.retry.retries'),
      ],
      // The consumer sets the group id itself; one in consumerConfig would be dropped.
      [{ consumerConfig: { groupId: 'other' } }, 'unknown option `consumerConfig.groupId`'],
      [{ timeouts: { requestTimeout: 1_000 } }, 'unknown option `timeouts.requestTimeout`'],
      [
        { resilience: { breaker: { openms: 1 } } },
        named('resilience.breaker.openms', 'resilience.breaker.openMs'),
      ],
    ];
    for (const [change, message] of cases) {
      const options = loose<KafkaConsumerOptions>({ ...base, brokers: BROKERS, ...change });
      const error = refusal(() => createKafkaConsumer(options));
      expect(error.message).toContain(`createKafkaConsumer: ${message}`);
    }
  });

  it('takes every option it documents', () => {
    expect(typeof createKafkaConsumer(allConsumerOptions()).start).toBe('function');
    const { kafka: _kafka, ...withBrokers } = allConsumerOptions();
    const timeouts = { connectMs: 1_000, requestMs: 2_000 };
    expect(typeof createKafkaConsumer({ ...withBrokers, brokers: BROKERS, timeouts }).start).toBe(
      'function',
    );
    // @platformatic/kafka takes topic names only, and an inbox in the `ids` mode.
    const names = { ...withBrokers, topics: ['t'], brokers: BROKERS, timeouts };
    expect(typeof createKafkaConsumer({ ...names, client: 'kafkajs' }).start).toBe('function');
    const inbox = createInbox({ store, consumer: 'kafka-options-ids' });
    expect(
      typeof createKafkaConsumer({ ...names, inbox, dedup: 'ids', client: 'platformatic' }).start,
    ).toBe('function');
  });

  it('refuses a client it does not know, one beside kafka, and patterns or watermarks on platformatic', () => {
    const { kafka, ...withBrokers } = allConsumerOptions();
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ brokers: BROKERS, client: 'rdkafka' }, /client must be one of kafkajs, platformatic/],
      [{ kafka, client: 'platformatic' }, /cannot be given with kafka/],
      [{ brokers: BROKERS, client: 'platformatic' }, /topic patterns \(RegExp\) need the kafkajs/],
      [
        { brokers: BROKERS, client: 'platformatic', topics: ['t'] },
        /dedup 'watermark' needs the kafkajs client/,
      ],
    ];
    for (const [change, message] of cases) {
      const error = refusal(() =>
        createKafkaConsumer(loose<KafkaConsumerOptions>({ ...withBrokers, ...change })),
      );
      expect(error.message).toMatch(message);
    }
  });

  it('refuses timeouts beside a client of its own, which keeps its settings', () => {
    const error = refusal(() =>
      createKafkaConsumer({ ...allConsumerOptions(), timeouts: { requestMs: 1_000 } }),
    );
    expect(error.message).toMatch(/timeouts apply to the client built from brokers/);
  });
});

describe('createKafkaPublisher', () => {
  it('refuses a misspelt option', () => {
    const error = refusal(() =>
      createKafkaPublisher(loose({ brokers: BROKERS, ackTimeOutMs: 1_000 })),
    );
    expect(error.message).toBe(`createKafkaPublisher: ${named('ackTimeOutMs', 'ackTimeoutMs')}`);
  });

  it('takes every option it documents (one client option at a time)', () => {
    const rest: Omit<
      Required<KafkaPublisherOptions>,
      'kafka' | 'brokers' | 'client' | 'producer' | 'timeouts'
    > = {
      clientId: 'relay',
      retries: 3,
      ackTimeoutMs: 2_000,
      sendTimeoutMs: 4_000,
      logger: silentLogger,
    };
    const variants: KafkaPublisherOptions[] = [
      { ...rest, brokers: BROKERS, timeouts: { connectMs: 1_000, requestMs: 3_000 } },
      { ...rest, brokers: BROKERS, client: 'kafkajs' },
      { ...rest, brokers: BROKERS, client: 'platformatic' },
      { ...rest, kafka: kafkajsClient({ brokers: BROKERS }) },
      { ...rest, producer: idleProducer },
    ];
    for (const options of variants) {
      expect(typeof createKafkaPublisher(options).publish).toBe('function');
    }
  });
});

describe('the client option of createKafkaPublisher', () => {
  it('refuses a client it does not know, and one beside kafka or producer', () => {
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ brokers: BROKERS, client: 'confluent' }, /client must be one of kafkajs, platformatic/],
      [{ kafka: kafkajsClient({ brokers: BROKERS }), client: 'kafkajs' }, /given with kafka/],
      [{ producer: idleProducer, client: 'platformatic' }, /given with producer/],
    ];
    for (const [options, message] of cases) {
      expect(refusal(() => createKafkaPublisher(loose(options))).message).toMatch(message);
    }
  });
});

describe('kafkajsClient', () => {
  it('refuses a misspelt option and takes every documented one', () => {
    const error = refusal(() => kafkajsClient(loose({ brokers: BROKERS, clientid: 'x' })));
    expect(error.message).toBe(`kafkajsClient: ${named('clientid', 'clientId')}`);
    expect(typeof kafkajsClient({ brokers: BROKERS, clientId: 'x' }).consumer).toBe('function');
    const timeouts = { connectMs: 1_000, requestMs: 2_000 };
    expect(typeof kafkajsClient({ brokers: BROKERS, timeouts }).producer).toBe('function');
    const nested = refusal(() =>
      kafkajsClient(loose({ brokers: BROKERS, timeouts: { connect: 1 } })),
    );
    expect(nested.message).toMatch(/kafkajsClient: unknown option `timeouts.connect`/);
  });

  it('refuses time limits that are not positive integers', () => {
    for (const requestMs of [0, -1, 1.5, '1000']) {
      const error = refusal(() =>
        kafkajsClient(loose({ brokers: BROKERS, timeouts: { requestMs } })),
      );
      expect(error.message).toMatch(/timeouts.requestMs must be an integer/);
    }
  });
});

describe('options that are not an object', () => {
  it('are refused with a ConfigurationError by every factory, never met with a TypeError', () => {
    const factories = { createKafkaConsumer, createKafkaPublisher, kafkajsClient };
    for (const factory of Object.values(factories)) {
      for (const value of [undefined, null, 42, []]) {
        const error = refusal(() => (factory as (options: unknown) => unknown)(value));
        expect(error.code).toBe('INVALID_CONFIG');
      }
    }
  });

  it('kafkajsClient refuses brokers that list no host', () => {
    for (const brokers of [[], [''], 'host:9092', [9092]]) {
      const error = refusal(() => kafkajsClient(loose({ brokers })));
      expect(error.message).toMatch(/brokers must list at least one host:port/);
    }
  });
});

describe('options of the wrong kind', () => {
  /** A consumer built from `brokers`, with `change` over every other option. */
  const consumerWith = (change: Record<string, unknown>): KafkaConsumerOptions => {
    const { kafka: _kafka, ...base } = allConsumerOptions();
    return loose<KafkaConsumerOptions>({ ...base, brokers: BROKERS, ...change });
  };

  it('refuse a logger without the four methods, in every factory', () => {
    const loggers = [{}, { debug: () => undefined }, 'console'];
    for (const logger of loggers) {
      const builds = [
        () => createKafkaConsumer(consumerWith({ logger })),
        () => createKafkaConsumer({ ...allConsumerOptions(), logger: logger as never }),
        () => createKafkaPublisher(loose({ brokers: BROKERS, logger })),
        () => createKafkaPublisher(loose({ producer: idleProducer, logger })),
        () => kafkajsClient(loose({ brokers: BROKERS, logger })),
      ];
      for (const build of builds) {
        expect(refusal(build).message).toMatch(/logger must have debug, info, warn and error/);
      }
    }
  });

  it('refuse a fromBeginning that is not a boolean and a scopeHeader that is no name', () => {
    for (const fromBeginning of ['yes', 1, null]) {
      expect(refusal(() => createKafkaConsumer(consumerWith({ fromBeginning }))).message).toBe(
        'createKafkaConsumer: fromBeginning must be a boolean',
      );
    }
    for (const scopeHeader of ['', 42, null]) {
      expect(refusal(() => createKafkaConsumer(consumerWith({ scopeHeader }))).message).toBe(
        'createKafkaConsumer: scopeHeader must be a non-empty string',
      );
    }
  });

  it('refuse a broker that is not host:port with a port from 1 to 65535', () => {
    const bad = ['nohost', 'host:', ':9092', 'host:0', 'host:65536', 'host:9092x', ' host:1'];
    // kafkajs splits an address at its first `:`, so it cannot connect to an IPv6 literal.
    bad.push('[::1]:9092', '::1:9092');
    for (const broker of bad) {
      const brokers = ['127.0.0.1:9092', broker];
      const builds: Array<[string, () => unknown]> = [
        ['createKafkaConsumer', () => createKafkaConsumer(consumerWith({ brokers }))],
        ['createKafkaPublisher', () => createKafkaPublisher({ brokers })],
        ['kafkajsClient', () => kafkajsClient({ brokers })],
      ];
      for (const [context, build] of builds) {
        expect(refusal(build).message).toMatch(
          new RegExp(`^${context}: brokers must list at least one host:port, each port from 1`),
        );
      }
    }
    const good = ['localhost:9092', 'b-1.kafka.example.com:65535', '10.0.0.1:1'];
    expect(typeof createKafkaConsumer(consumerWith({ brokers: good })).start).toBe('function');
    expect(typeof createKafkaPublisher({ brokers: good }).publish).toBe('function');
  });
});
