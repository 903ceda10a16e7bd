export type { Envelope, DeliveryFacts } from './envelope';
export type { Publisher, OutgoingMessage, PublishResult } from './publisher';
