/**
 * @justonce/rabbitmq — the justonce inbox around amqplib consumers, and the outbox relay's
 * RabbitMQ publisher on a confirm channel.
 *
 * @packageDocumentation
 */
export { createRabbitConsumer } from './consumer/create-consumer';
export { RETRY_HEADERS } from './consumer/settle';
export type { RabbitConsumer } from './consumer/types';
export type {
  RabbitConsumerOptions,
  RabbitDeadLetterOptions,
  RabbitRetryOptions,
  RabbitReconnectOptions,
  RabbitBackoffOptions,
} from './consumer/options';
export type { RabbitConnectionEvent } from './consumer/types';
export type { RabbitTopology } from './consumer/topology/declare';
export { retryQueueName } from './consumer/topology/declare';
export { DEFAULT_DELAY_LADDER_MS } from './consumer/topology/retry-delays';
export { PARTITION_KEY_HEADER } from './consumer/envelope';
export { createRabbitPublisher } from './publisher/create-publisher';
export type { RabbitPublisherOptions } from './publisher/options';
export { parseDestination } from './publisher/destination';
export type { AmqpTarget } from './publisher/destination';
export type { AmqpConnect, ConnectionOptions } from './client/connection';
export {
  RabbitConnectionError,
  RabbitTopologyError,
  UnroutableMessageError,
  PublishRejectedError,
  InvalidDestinationError,
} from './errors';
