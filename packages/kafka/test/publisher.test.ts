import type { Admin, Kafka } from 'kafkajs';
import { hasErrorCode, type OutgoingMessage, type Publisher } from '@justonce/core';
import { createKafkaPublisher } from '../src';
import { createTopics, readTopic, testKafka, unique } from './support';

let kafka: Kafka;
let admin: Admin;
const publishers: Publisher[] = [];

beforeAll(async () => {
  kafka = testKafka();
  admin = kafka.admin();
  await admin.connect();
});

afterEach(async () => {
  await Promise.all(publishers.splice(0).map((p) => p.close()));
});

afterAll(async () => {
  await admin.disconnect();
});

function publisher(): Publisher {
  const p = createKafkaPublisher({ kafka, retries: 2 });
  publishers.push(p);
  return p;
}

const message = (
  destination: string,
  messageId: string,
  key: string | null,
  body: string,
): OutgoingMessage => ({
  messageId,
  destination,
  key,
  headers: {
    'causation-id': `cause-${messageId}`,
    'correlation-id': 'flow-1',
    traceparent: 'tp',
    tenant: 'acme',
  },
  payload: new TextEncoder().encode(body),
});

describe('createKafkaPublisher', () => {
  it('publishes with key, message-id and carried headers, keeping per-key order in one partition', async () => {
    const topic = unique('pub');
    const other = unique('pub-b');
    await createTopics(admin, [topic, other], 3);
    const messages = [
      ...Array.from({ length: 12 }, (_, i) => message(topic, `m-${i}`, `key-${i % 3}`, `v${i}`)),
      message(other, 'm-other', null, 'elsewhere'),
    ];
    const results = await publisher().publish(messages);
    expect(results).toEqual(messages.map((m) => ({ messageId: m.messageId, ok: true })));

    const records = await readTopic(kafka, topic, 12);
    expect(records).toHaveLength(12);
    for (const r of records) {
      expect(r.headers).toMatchObject({
        'message-id': expect.stringMatching(/^m-\d+$/),
        'causation-id': `cause-${r.headers['message-id']}`,
        'correlation-id': 'flow-1',
        traceparent: 'tp',
        tenant: 'acme',
      });
    }
    for (const key of ['key-0', 'key-1', 'key-2']) {
      const ofKey = records.filter((r) => r.key === key);
      expect(new Set(ofKey.map((r) => r.partition)).size).toBe(1);
      const order = ofKey.map((r) => Number(r.value!.slice(1)));
      expect(order).toEqual([...order].sort((a, b) => a - b));
    }
    const [elsewhere] = await readTopic(kafka, other, 1);
    expect(elsewhere).toMatchObject({
      key: null,
      value: 'elsewhere',
      headers: { 'message-id': 'm-other' },
    });
  });

  it('reports per-message results: a bad topic fails for good, the rest succeed', async () => {
    const topic = unique('pub-ok');
    await createTopics(admin, [topic], 1);
    const results = await publisher().publish([
      message(topic, 'a', 'k', 'a'),
      message('not a valid topic!', 'b', 'k', 'b'),
      message(topic, 'c', 'k', 'c'),
    ]);
    expect(results.map((r) => [r.messageId, r.ok])).toEqual([
      ['a', true],
      ['b', false],
      ['c', true],
    ]);
    const failed = results[1]!;
    expect(failed.ok === false && failed.retriable).toBe(false);
    expect(failed.ok === false && hasErrorCode(failed.error, 'KAFKA_PUBLISH_FAILED')).toBe(true);
  });

  it('reports a message larger than the broker accepts as failed and not retriable', async () => {
    const topic = unique('pub-big');
    await admin.createTopics({
      waitForLeaders: true,
      topics: [
        { topic, numPartitions: 1, configEntries: [{ name: 'max.message.bytes', value: '1024' }] },
      ],
    });
    const [result] = await publisher().publish([message(topic, 'big', 'k', 'x'.repeat(4096))]);
    expect(result).toMatchObject({ messageId: 'big', ok: false, retriable: false });
  });

  it('closes idempotently and refuses to publish afterwards', async () => {
    const p = createKafkaPublisher({ kafka });
    await p.close();
    await p.close();
    await expect(p.publish([message('t', 'x', null, 'x')])).rejects.toMatchObject({
      code: 'KAFKA_INVALID_STATE',
    });
    await expect(p.connect()).rejects.toMatchObject({ code: 'KAFKA_INVALID_STATE' });
  });
});
