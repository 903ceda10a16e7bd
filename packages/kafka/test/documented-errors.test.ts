import { isJustonceError } from '@justonce/core';
import { DeadLetterPublishError, type KafkaProducerClient } from '../src';
import { forwardToDeadLetterTopic } from '../src/dead-letter';

/**
 * The README's `DeadLetterPublishError` (`KAFKA_DEAD_LETTER_PUBLISH_FAILED`, retriable): what a
 * dead-letter forward rejects with when the broker does not take the record. (That the record
 * is then not committed is shown in consumer.test.ts.)
 */
describe('DeadLetterPublishError', () => {
  it('is what a refused dead-letter forward rejects with, retriable, with the cause', async () => {
    const refusal = new Error('TOPIC_AUTHORIZATION_FAILED');
    const producer: KafkaProducerClient = {
      connect: async () => undefined,
      disconnect: async () => undefined,
      send: async () => {
        throw refusal;
      },
    };
    const record = { key: null, value: Buffer.from('x'), offset: '7', timestamp: '0' };
    const why = {
      reason: 'NON_RETRIABLE',
      error: new Error('poison'),
      attempt: 1,
      deadLetterId: '1',
      consumer: 'c',
    };
    const caught: unknown = await forwardToDeadLetterTopic(
      producer,
      'orders.dlq',
      record,
      'orders',
      3,
      why,
    ).catch((error: unknown) => error);
    expect(caught).toBeInstanceOf(DeadLetterPublishError);
    expect(isJustonceError(caught)).toBe(true);
    expect(caught).toMatchObject({
      code: 'KAFKA_DEAD_LETTER_PUBLISH_FAILED',
      retriable: true,
      cause: refusal,
      details: { topic: 'orders', partition: 3, offset: '7', deadLetterTopic: 'orders.dlq' },
    });
  });
});
