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
/**
 * Option validators shared with the transports, so that their options are checked and reported
 * the way core's are. @internal
 */
export {
  integerOption,
  optionKeys,
  optionalFunction,
  positiveIntegerOption,
  rejectUnknownOptions,
} from '../config/options';
/** The consumer skeleton every transport fills in: lifecycle, decision, dead-letter facts, message id. */
export * from './consumer';
