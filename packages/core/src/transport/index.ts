export type { Envelope, DeliveryFacts, DeliveryPosition } from './envelope';
export type { Publisher, OutgoingMessage, PublishResult } from './publisher';
export { createMemoryPublisher } from './memory-publisher';
export { messageHeaders, MESSAGE_ID_HEADER } from './message-headers';
export type {
  MemoryPublisher,
  MemoryPublisherOptions,
  PublishedMessage,
  FailureRule,
} from './memory-publisher';
