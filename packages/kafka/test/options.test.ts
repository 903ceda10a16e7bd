import { createInbox, isJustonceError, type Inbox } from '@justonce/core';
import {
  createKafkaConsumer,
  createKafkaPublisher,
  isTopicName,
  type KafkaConsumerOptions,
} from '../src';
import { openTestStore } from '../../core/test/db';
import { testKafka } from './support';

let store: Awaited<ReturnType<typeof openTestStore>>;
let inbox: Inbox;

beforeAll(async () => {
  store = await openTestStore('pglite');
  inbox = createInbox({ store, consumer: 'options' });
});

afterAll(async () => {
  await store.dispose();
});

function base(): KafkaConsumerOptions {
  return {
    inbox,
    handler: async () => undefined,
    groupId: 'g',
    topics: ['t'],
    brokers: ['127.0.0.1:1'],
  };
}

function configError(make: () => unknown): string {
  try {
    make();
  } catch (error) {
    if (isJustonceError(error) && error.code === 'INVALID_CONFIG') return error.message;
    throw error;
  }
  throw new Error('expected a configuration error');
}

describe('createKafkaConsumer configuration', () => {
  it('accepts a valid configuration without connecting', () => {
    expect(typeof createKafkaConsumer(base()).start).toBe('function');
  });

  it('accepts the dedup mode its inbox was created with', () => {
    const watermarked = createInbox({ store, consumer: 'options-wm', dedup: 'watermark' });
    const options = { ...base(), inbox: watermarked, dedup: 'watermark' } as const;
    expect(typeof createKafkaConsumer(options).start).toBe('function');
  });

  it.each<[string, Partial<KafkaConsumerOptions>, RegExp]>([
    ['no group id', { groupId: '' }, /groupId/],
    ['no topics', { topics: [] }, /topics/],
    ['a bad topic name', { topics: ['has space'] }, /topic name/],
    ['no client and no brokers', { brokers: undefined }, /kafka \(a client\) or brokers/],
    ['both a client and brokers', { kafka: testKafka() }, /only one of kafka and brokers/],
    ['an unknown mode', { mode: 'stream' as never }, /mode/],
    ['a zero batch size', { batchSize: 0 }, /batchSize/],
    ['an unknown dedup mode', { dedup: 'offsets' as never }, /dedup must be one of/],
    [
      'a dedup mode the inbox was not created with',
      { dedup: 'watermark' },
      /dedup is 'watermark' but the inbox was created with dedup 'ids'/,
    ],
    ['a fractional concurrency', { concurrency: 1.5 }, /concurrency/],
    ['an empty id header', { messageId: { header: '' } }, /messageId.header/],
    ['a bad dead-letter topic', { deadLetter: { topic: 'a/b' } }, /deadLetter.topic/],
    ['a negative session timeout', { consumerConfig: { sessionTimeout: -1 } }, /sessionTimeout/],
    ['a zero request timeout', { timeouts: { requestMs: 0 } }, /timeouts.requestMs/],
    [
      'heartbeats no more often than the session timeout',
      { consumerConfig: { sessionTimeout: 6000, heartbeatInterval: 6000 } },
      /heartbeatInterval must be below sessionTimeout/,
    ],
  ])('rejects %s', (_, change, message) => {
    expect(configError(() => createKafkaConsumer({ ...base(), ...change }))).toMatch(message);
  });
});

describe('createKafkaPublisher configuration', () => {
  it.each<[string, Parameters<typeof createKafkaPublisher>[0], RegExp]>([
    ['nothing to publish with', {}, /exactly one of kafka, brokers and producer/],
    ['two clients', { brokers: ['x:1'], kafka: testKafka() }, /exactly one/],
    ['zero retries', { brokers: ['x:1'], retries: 0 }, /retries/],
    ['a zero ack timeout', { brokers: ['x:1'], ackTimeoutMs: 0 }, /ackTimeoutMs/],
    ['a zero send timeout', { brokers: ['x:1'], sendTimeoutMs: 0 }, /sendTimeoutMs/],
    [
      'a broker wait as long as the send limit',
      { brokers: ['x:1'], ackTimeoutMs: 8_000 },
      /ackTimeoutMs must be below sendTimeoutMs/,
    ],
    [
      'a broker wait as long as the request limit',
      { brokers: ['x:1'], ackTimeoutMs: 3_000, timeouts: { requestMs: 3_000 } },
      /ackTimeoutMs must be below timeouts.requestMs/,
    ],
    [
      'time limits beside a client it did not build',
      { kafka: testKafka(), timeouts: { requestMs: 3_000 } },
      /timeouts apply to the client built from brokers/,
    ],
  ])('rejects %s', (_, options, message) => {
    expect(configError(() => createKafkaPublisher(options))).toMatch(message);
  });
});

describe('isTopicName', () => {
  it('follows Kafka’s rules', () => {
    expect(['orders', 'a.b_c-9', 'x'.repeat(249)].every(isTopicName)).toBe(true);
    expect(['', '.', '..', 'a b', 'x'.repeat(250), 'ü'].some(isTopicName)).toBe(false);
  });
});
