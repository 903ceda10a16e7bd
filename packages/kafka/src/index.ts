/**
 * @justonce/kafka — a transactional inbox around kafkajs consumer groups, and the relay's
 * Kafka publisher.
 *
 * @packageDocumentation
 */
export { createKafkaConsumer, isTopicName } from './consumer';
export type { KafkaConsumerOptions, KafkaInboxConsumer } from './consumer';
export type { RecordPosition } from './batch-processor';
export { createKafkaPublisher } from './publisher';
export type { KafkaPublisher, KafkaPublisherOptions } from './publisher';
export { kafkajsClient, DEFAULT_KAFKA_TIMEOUTS } from './client';
export type {
  KafkaClient,
  KafkajsClientOptions,
  KafkaTimeouts,
  KafkaConsumerClient,
  KafkaConsumerConfig,
  KafkaProducerClient,
  KafkaProducerConfig,
  KafkaProducerRecord,
  KafkaRecord,
  KafkaBatch,
  KafkaBatchContext,
  KafkaRunConfig,
  KafkaOffsetsByTopicPartition,
  KafkaTopicPartitions,
  KafkaInstrumentationEvent,
} from './client';
export type { MessageIdOptions } from './message-id';
export { HEADERS, DEAD_LETTER_HEADERS } from './headers';
export type { RawHeaders, RawHeaderValue } from './headers';
export { defaultDeadLetterTopic } from './dead-letter';
export type { DeadLetterTopicName } from './dead-letter';
export {
  DeadLetterPublishError,
  KafkaPublishError,
  KafkaStateError,
  KafkaTimeoutError,
} from './errors';
