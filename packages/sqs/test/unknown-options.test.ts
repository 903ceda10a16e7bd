import { SQSClient } from '@aws-sdk/client-sqs';
import {
  createInbox,
  createStore,
  resolveMeter,
  silentLogger,
  type Inbox,
  type Store,
} from '@justonce/core';
import {
  createSqsConsumer,
  createSqsPublisher,
  type SqsConsumerOptions,
  type SqsPublisherOptions,
} from '../src';
import { refusal } from '../../../test-support/refusal';

/**
 * Both factories of the package refuse an option their interface does not declare, naming it
 * and the closest known one, and still take every option they document. Nothing here connects.
 */

/** The message part naming `key` and suggesting `suggestion`. */
const named = (key: string, suggestion: string): string =>
  `unknown option \`${key}\`; did you mean \`${suggestion}\`?`;

/** Bypasses the option types, as a JavaScript caller (or a cast) would. */
function loose<T>(options: Record<string, unknown>): T {
  return options as T;
}

const QUEUE_URL = 'http://127.0.0.1:1/000000000000/jobs';
const CLIENT_CONFIG = {
  region: 'us-east-1',
  endpoint: 'http://127.0.0.1:1',
  credentials: { accessKeyId: 'x', secretAccessKey: 'x' },
};

let store: Store;
const clients: SQSClient[] = [];

beforeAll(async () => {
  // Construction never touches the database; a lazily connecting store is enough.
  store = await createStore({ connectionString: 'postgres://127.0.0.1:1/none' });
});

afterAll(async () => {
  for (const client of clients) client.destroy();
  await store.close();
});

function client(): SQSClient {
  const c = new SQSClient(CLIENT_CONFIG);
  clients.push(c);
  return c;
}

/** A ready inbox: the consumer takes an `Inbox` only. */
function anInbox(): Inbox {
  return createInbox({ store, consumer: 'sqs-options' });
}

/** Every option but `clientConfig` (which excludes `client`). */
function allConsumerOptions(): Omit<Required<SqsConsumerOptions>, 'clientConfig'> {
  return {
    client: client(),
    queueUrl: QUEUE_URL,
    inbox: anInbox(),
    handler: async () => undefined,
    mode: 'batch',
    concurrency: 4,
    waitTimeSeconds: 1,
    visibilityTimeoutSeconds: 30,
    heartbeat: { enabled: true, intervalMs: 10_000 },
    retry: { baseMs: 100, capMs: 1_000 },
    deadLetter: { queueUrl: 'http://127.0.0.1:1/000000000000/jobs-dlq' },
    messageId: { header: 'id', extract: () => undefined, fallback: false },
    scopeHeader: 'tenant',
    shutdownTimeoutMs: 1_000,
    onSettled: () => undefined,
    logger: silentLogger,
    meter: resolveMeter(),
    timeouts: { connectMs: 1_000, requestMs: 2_000 },
    resilience: {
      budget: false,
      breaker: { trip: { consecutiveFailures: 2 }, openMs: 1_000, maxKeys: 10 },
    },
  };
}

describe('createSqsConsumer', () => {
  it('refuses misspelt options, nested ones with their path', () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ waitTimeSecond: 1 }, named('waitTimeSecond', 'waitTimeSeconds')],
      [{ heartbeat: { intervalms: 1_000 } }, named('heartbeat.intervalms', 'heartbeat.intervalMs')],
      [{ retry: { capms: 1_000 } }, named('retry.capms', 'retry.capMs')],
      [{ messageId: { headr: 'id' } }, named('messageId.headr', 'messageId.header')],
      [
        { deadLetter: { queueURL: QUEUE_URL } },
        named('deadLetter.queueURL', 'deadLetter.queueUrl'),
      ],
      [{ timeouts: { requestms: 1_000 } }, named('timeouts.requestms', 'timeouts.requestMs')],
      [{ scopeHeadr: 'tenant' }, named('scopeHeadr', 'scopeHeader')],
      [
        { resilience: { breaker: { maxkeys: 1 } } },
        named('resilience.breaker.maxkeys', 'resilience.breaker.maxKeys'),
      ],
    ];
    for (const [change, message] of cases) {
      const options = loose<SqsConsumerOptions>({ ...allConsumerOptions(), ...change });
      expect(refusal(() => createSqsConsumer(options)).message).toContain(
        `createSqsConsumer: ${message}`,
      );
    }
  });

  it('refuses the names the SQS worker had, each a ConfigurationError', () => {
    const renamed: Array<Record<string, unknown>> = [
      { deadLetterQueueUrl: 'http://127.0.0.1:1/000000000000/jobs-dlq' },
      { scopeAttribute: 'tenant' },
      { decode: (body: unknown) => body },
      { messageId: { attribute: 'id' } },
      { messageId: { fallbackToSqsMessageId: false } },
      { inbox: { store, consumer: 'c' } },
    ];
    for (const change of renamed) {
      const options = loose<SqsConsumerOptions>({ ...allConsumerOptions(), ...change });
      expect(refusal(() => createSqsConsumer(options)).code).toBe('INVALID_CONFIG');
    }
  });

  it('takes every option it documents, with a client or a client config', () => {
    expect(createSqsConsumer(allConsumerOptions()).running).toBe(false);
    const { client: _client, ...rest } = allConsumerOptions();
    const withConfig = createSqsConsumer({ ...rest, clientConfig: CLIENT_CONFIG });
    expect(withConfig.running).toBe(false);
    const readyInbox: SqsConsumerOptions['inbox'] = {
      consumer: 'c',
      process: async () => ({ status: 'duplicate', messageId: 'm', scope: 'default' }),
      processBatch: async () => [],
      flushActivity: async () => undefined,
    };
    expect(
      createSqsConsumer({ ...rest, clientConfig: CLIENT_CONFIG, inbox: readyInbox }).running,
    ).toBe(false);
  });
});

describe('createSqsPublisher', () => {
  it('refuses misspelt options, backoff ones with their path', () => {
    const top = refusal(() => createSqsPublisher(loose({ client: client(), maxattempts: 2 })));
    expect(top.message).toBe(`createSqsPublisher: ${named('maxattempts', 'maxAttempts')}`);
    const nested = refusal(() =>
      createSqsPublisher({ client: client(), backoff: loose({ basems: 10 }) }),
    );
    expect(nested.message).toContain(named('backoff.basems', 'backoff.baseMs'));
    const timeouts = refusal(() =>
      createSqsPublisher({ client: client(), timeouts: loose({ connectms: 10 }) }),
    );
    expect(timeouts.message).toContain(named('timeouts.connectms', 'timeouts.connectMs'));
    const negative = refusal(() =>
      createSqsPublisher({ client: client(), timeouts: { requestMs: -1 } }),
    );
    expect(negative.message).toContain('timeouts.requestMs must be an integer from 0 to 600000');
  });

  it('takes every option it documents', async () => {
    const all: Omit<Required<SqsPublisherOptions>, 'clientConfig'> = {
      client: client(),
      maxMessageBytes: 262_144,
      bodyEncoding: 'base64',
      maxAttempts: 2,
      backoff: { baseMs: 10, capMs: 100 },
      concurrency: 2,
      logger: silentLogger,
      timeouts: { connectMs: 0, requestMs: 0 },
    };
    await createSqsPublisher(all).close();
    const { client: _client, ...rest } = all;
    await createSqsPublisher({ ...rest, clientConfig: CLIENT_CONFIG }).close();
  });
});

describe('logger', () => {
  it('is refused by both factories unless it has debug, info, warn and error', () => {
    const partial = loose<SqsPublisherOptions['logger']>({ warn() {} });
    const publisher = refusal(() => createSqsPublisher({ client: client(), logger: partial }));
    expect(publisher.message).toContain('logger must have debug, info, warn and error methods');
    const consumer = refusal(() => createSqsConsumer({ ...allConsumerOptions(), logger: partial }));
    expect(consumer.message).toContain('logger must have debug, info, warn and error methods');
  });
});

describe('options that are not an object', () => {
  it('are refused with a ConfigurationError by every factory, never met with a TypeError', () => {
    const factories = { createSqsConsumer, createSqsPublisher };
    for (const factory of Object.values(factories)) {
      for (const value of [undefined, null, 42, []]) {
        const error = refusal(() => (factory as (options: unknown) => unknown)(value));
        expect(error.code).toBe('INVALID_CONFIG');
      }
    }
  });
});
