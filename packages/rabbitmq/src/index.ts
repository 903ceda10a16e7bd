/**
 * @justonce/rabbitmq — the justonce inbox around amqplib consumers, and the outbox relay's
 * RabbitMQ publisher on a confirm channel.
 *
 * @packageDocumentation
 */
export { createRabbitConsumer } from './consumer/consumer';
export { RETRY_HEADERS } from './consumer/settle';
export type { RabbitConsumer } from './consumer/consumer';
export type {
  RabbitConsumerOptions,
  RabbitDeadLetterOptions,
  RabbitRetryOptions,
  RabbitReconnectOptions,
  RabbitBackoffOptions,
} from './consumer/options';
export type { RabbitConnectionEvent } from './consumer/events';
export type { RabbitTopology } from './consumer/topology';
export { retryQueueName } from './consumer/topology';
export { DEFAULT_DELAY_LADDER_MS } from './consumer/retry-delays';
export { PARTITION_KEY_HEADER } from './consumer/envelope';
export { createRabbitPublisher } from './publisher/publisher';
export type { RabbitPublisherOptions } from './publisher/publisher';
export { parseDestination } from './publisher/destination';
export type { AmqpTarget } from './publisher/destination';
export type { AmqpConnect, ConnectionOptions } from './amqp/connection';
export {
  RabbitConnectionError,
  RabbitTopologyError,
  UnroutableMessageError,
  PublishRejectedError,
  InvalidDestinationError,
} from './errors';
