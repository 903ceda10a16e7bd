export { createInbox } from './create-inbox';
export { on, messageHandler } from './message-handler';
export type { MessageRoute, MessageHandlerOptions, UnknownTypePolicy } from './message-handler';
export { MAX_BATCH_SIZE } from './process-batch';
export type { CountedOutcome } from './instruments';
export { FinalError } from './errors/final-error';
export { MissingMessageIdError } from './errors/missing-message-id-error';
export { InvalidMessageIdError } from './errors/invalid-message-id-error';
export { InvalidScopeError } from './errors/invalid-scope-error';
export { InvalidBodyError } from './errors/invalid-body-error';
export { InvalidHeadersError } from './errors/invalid-headers-error';
export { InvalidEnvelopeError } from './errors/invalid-envelope-error';
export { UndecodableBodyError } from './errors/undecodable-body-error';
export { PayloadConflictError } from './errors/payload-conflict-error';
export { MaxAttemptsExceededError } from './errors/max-attempts-exceeded-error';
export { AlreadyDeadLetteredError } from './errors/already-dead-lettered-error';
export { ConcurrentDeliveryError } from './errors/concurrent-delivery-error';
export { AbortedTransactionError } from './errors/aborted-transaction-error';
export type { InboxErrorClass, InboxErrorClassifier } from './types';
export type {
  Inbox,
  InboxOptions,
  InboxProcessOptions,
  InboxOutcome,
  InboxStep,
  Handler,
  HandlerContext,
} from './types';
