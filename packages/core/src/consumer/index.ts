export {
  consumerLifecycle,
  ConsumerStateError,
  type Consumer,
  type LifecycleHooks,
  type ConsumerStopOptions,
} from './lifecycle';
export {
  decide,
  decideOnThrow,
  type Decision,
  type DecisionContext,
  type SettleAction,
  type SettledEvent,
} from './settle';
export {
  DEAD_LETTER_HEADERS,
  DEAD_LETTER_POSITION_HEADERS,
  deadLetterFacts,
  deadLetterHeaders,
  type DeadLetterFacts,
} from './dead-letter-facts';
export {
  DEFAULT_MESSAGE_ID_HEADER,
  findMessageId,
  resolveMessageIdOptions,
  type MessageIdOptions,
  type ResolvedMessageId,
} from './message-id';
