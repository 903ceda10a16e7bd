export type { Envelope, DeliveryFacts } from './envelope';
export type { Publisher, OutgoingMessage, PublishResult } from './publisher';
export { createMemoryPublisher } from './memory-publisher';
export type {
  MemoryPublisher,
  MemoryPublisherOptions,
  PublishedMessage,
  FailureRule,
} from './memory-publisher';
export { integerOption } from '../config/options';
