import { SQSClient } from '@aws-sdk/client-sqs';
import {
  ConfigurationError,
  createStore,
  resolveMeter,
  silentLogger,
  type Store,
} from '@justonce/core';
import {
  createSqsPublisher,
  createSqsWorker,
  type SqsInboxSettings,
  type SqsPublisherOptions,
  type SqsWorkerOptions,
} from '../src';

/**
 * Both factories of the package refuse an option their interface does not declare, naming it
 * and the closest known one, and still take every option they document. Nothing here connects.
 */

/** The configuration error `run` throws. */
function refusal(run: () => unknown): ConfigurationError {
  try {
    run();
  } catch (error) {
    if (error instanceof ConfigurationError) return error;
    throw error;
  }
  throw new Error('expected a ConfigurationError');
}

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

function allInboxSettings(): Required<SqsInboxSettings> {
  return {
    store,
    consumer: 'sqs-options',
    defaultScope: 'tenant-a',
    maxAttempts: 3,
    maxIdLength: 100,
    fingerprintHeaders: ['content-type'],
    outbox: { add: async () => [] },
    retentionMs: 60_000,
    onStep: () => undefined,
    logPayloads: false,
    alwaysCountAttempts: true,
    classify: () => undefined,
  };
}

/** Every option but `clientConfig` (which excludes `client`). */
function allWorkerOptions(): Omit<Required<SqsWorkerOptions>, 'clientConfig'> {
  return {
    client: client(),
    queueUrl: QUEUE_URL,
    inbox: allInboxSettings(),
    handler: async () => undefined,
    mode: 'batch',
    concurrency: 4,
    waitTimeSeconds: 1,
    visibilityTimeoutSeconds: 30,
    heartbeat: { enabled: true, intervalMs: 10_000 },
    retry: { baseMs: 100, capMs: 1_000 },
    deadLetterQueueUrl: 'http://127.0.0.1:1/000000000000/jobs-dlq',
    messageId: { attribute: 'id', extract: () => undefined, fallbackToSqsMessageId: false },
    scopeAttribute: 'tenant',
    decode: (body) => body,
    shutdownTimeoutMs: 1_000,
    onSettled: () => undefined,
    logger: silentLogger,
    meter: resolveMeter(),
    timeouts: { connectMs: 1_000, requestMs: 2_000 },
  };
}

describe('createSqsWorker', () => {
  it('refuses misspelt options, nested ones with their path', () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ waitTimeSecond: 1 }, named('waitTimeSecond', 'waitTimeSeconds')],
      [{ heartbeat: { intervalms: 1_000 } }, named('heartbeat.intervalms', 'heartbeat.intervalMs')],
      [{ retry: { capms: 1_000 } }, named('retry.capms', 'retry.capMs')],
      [{ messageId: { attribtue: 'id' } }, named('messageId.attribtue', 'messageId.attribute')],
      [{ timeouts: { requestms: 1_000 } }, named('timeouts.requestms', 'timeouts.requestMs')],
      [
        { inbox: { ...allInboxSettings(), maxAttempt: 3 } },
        named('inbox.maxAttempt', 'inbox.maxAttempts'),
      ],
      // The worker sets the inbox's backoff from `retry`: one given here would be dropped.
      [{ inbox: { store, consumer: 'c', backoff: {} } }, 'unknown option `inbox.backoff`'],
    ];
    for (const [change, message] of cases) {
      const options = loose<SqsWorkerOptions>({ ...allWorkerOptions(), ...change });
      expect(refusal(() => createSqsWorker(options)).message).toContain(
        `createSqsWorker: ${message}`,
      );
    }
  });

  it('takes every option it documents, with inbox settings or a ready inbox', () => {
    expect(createSqsWorker(allWorkerOptions()).running).toBe(false);
    const { client: _client, ...rest } = allWorkerOptions();
    const withConfig = createSqsWorker({ ...rest, clientConfig: CLIENT_CONFIG });
    expect(withConfig.running).toBe(false);
    const readyInbox: SqsWorkerOptions['inbox'] = {
      consumer: 'c',
      process: async () => ({ status: 'duplicate', messageId: 'm', scope: 'default' }),
      processBatch: async () => [],
    };
    const { decode: _decode, ...noDecode } = allWorkerOptions();
    expect(createSqsWorker({ ...noDecode, inbox: readyInbox }).running).toBe(false);
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

describe('options that are not an object', () => {
  it('are refused with a ConfigurationError by every factory, never met with a TypeError', () => {
    const factories = { createSqsWorker, createSqsPublisher };
    for (const factory of Object.values(factories)) {
      for (const value of [undefined, null, 42, []]) {
        const error = refusal(() => (factory as (options: unknown) => unknown)(value));
        expect(error.code).toBe('INVALID_CONFIG');
      }
    }
  });
});
