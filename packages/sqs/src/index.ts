/**
 * @justonce/sqs — a transactional inbox around an SQS consumer (long polling,
 * visibility heartbeat, batch delete after commit, retries through the visibility timeout,
 * dead-letter queue, FIFO group order) and the relay's SQS publisher.
 *
 * @packageDocumentation
 */
export { createSqsConsumer } from './consumer/create-consumer';
export type {
  SqsConsumer,
  SqsConsumerOptions,
  SqsDeadLetterOptions,
  SqsHeartbeatOptions,
  SqsQueueInfo,
  SqsMeter,
} from './consumer/types';
export { createSqsPublisher } from './publisher/create-publisher';
export type { SqsPublisherOptions } from './publisher/types';
export { MESSAGE_ID_ATTRIBUTE } from './publisher/entry';
export { MAX_BATCH_ENTRIES } from './publisher/plan';
export type { SqsClientSource } from './client/client';
export type { SqsTimeoutOptions } from './client/time-limits';
export { toEnvelope } from './consumer/envelope';
export type { EnvelopeSettings } from './consumer/envelope';
export {
  MAX_MESSAGE_ATTRIBUTES,
  attributeNameProblem,
  fromMessageAttributes,
  toMessageAttributes,
} from './client/attributes';
export { BODY_ENCODING_ATTRIBUTE, decodeBody } from './client/body';
export type { BodyEncoding } from './client/body';
export { isQueueName, isQueueUrl, isFifoQueue, MAX_QUEUE_NAME_LENGTH } from './client/queue-names';
export * from './errors';
