/**
 * @justonce/kafka — a transactional inbox around kafkajs consumer groups, and the relay's
 * Kafka publisher.
 *
 * @packageDocumentation
 */
export { createKafkaConsumer } from './consumer/create-consumer';
export { isTopicName } from './consumer/options';
export type {
  KafkaConsumer,
  KafkaConsumerOptions,
  KafkaDeadLetterOptions,
  KafkaDelivery,
} from './consumer/types';
export { createKafkaPublisher } from './publisher/create-publisher';
export type { KafkaPublisher } from './publisher/create-publisher';
export type { KafkaPublisherOptions } from './publisher/options';
export { kafkajsClient, DEFAULT_KAFKA_TIMEOUTS } from './client/kafkajs/client';
export type { KafkajsClientOptions, KafkaTimeouts } from './client/kafkajs/client';
export { platformaticClient } from './client/platformatic/client';
export type { PlatformaticClientOptions } from './client/platformatic/client';
export { KAFKA_CLIENT_NAMES } from './client/built-client';
export type { KafkaClientName } from './client/built-client';
export type {
  KafkaClient,
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
} from './client/types';
export { HEADERS } from './client/headers';
/**
 * Core's dead-letter header names, re-exported: every transport's dead letters carry them
 * (a Kafka record's partition and offset under `DEAD_LETTER_POSITION_HEADERS`).
 */
export { DEAD_LETTER_HEADERS, DEAD_LETTER_POSITION_HEADERS } from '@justonce/core';
export type { RawHeaders, RawHeaderValue } from './client/headers';
export { defaultDeadLetterTopic } from './consumer/dead-letter';
export type { DeadLetterTopicName } from './consumer/types';
export {
  DeadLetterPublishError,
  KafkaPublishError,
  KafkaStateError,
  KafkaTimeoutError,
} from './errors';
