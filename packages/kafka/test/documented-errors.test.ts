import { isJustonceError, type DeadLetterFacts } from '@justonce/core';
import { DeadLetterPublishError, type KafkaProducerClient } from '../src';
import { forwardToDeadLetterTopic } from '../src/consumer/dead-letter';

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
    const facts: DeadLetterFacts = {
      reason: 'NON_RETRIABLE',
      errorCode: undefined,
      error: 'poison',
      attempts: 1,
      messageId: 'm-1',
      scope: 'default',
      consumer: 'c',
      source: 'orders',
      deadLetterId: '1',
      at: new Date(),
    };
    const caught: unknown = await forwardToDeadLetterTopic(
      producer,
      'orders.dlq',
      { topic: 'orders', partition: 3, record },
      facts,
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
