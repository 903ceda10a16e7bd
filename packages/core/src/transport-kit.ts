/**
 * @justonce/core/transport — the kit for writing a transport: the envelope a delivery maps to,
 * the publisher the relay sends through, the consumer skeleton every transport fills in
 * (lifecycle, decision, dead-letter facts, message id), the option validators that check and
 * report options the way core's are, and core's small shared helpers (errors, time, signals).
 * See docs/writing-a-transport.md.
 *
 * @packageDocumentation
 */
export type { Envelope, DeliveryFacts, DeliveryPosition } from './transport/envelope';
export type { Publisher, OutgoingMessage, PublishResult } from './transport/publisher';
export { messageHeaders, MESSAGE_ID_HEADER } from './transport/message-headers';
export {
  consumerLifecycle,
  ConsumerStateError,
  decide,
  decideOnThrow,
  DEAD_LETTER_HEADERS,
  DEAD_LETTER_POSITION_HEADERS,
  deadLetterFacts,
  deadLetterHeaders,
  DEFAULT_MESSAGE_ID_HEADER,
  findMessageId,
  resolveMessageIdOptions,
} from './consumer';
export type {
  Consumer,
  ConsumerStopOptions,
  DeadLetterFacts,
  Decision,
  DecisionContext,
  LifecycleHooks,
  MessageIdOptions,
  ResolvedMessageId,
  SettleAction,
  SettledEvent,
} from './consumer';
export {
  createResilienceGate,
  driveIntake,
  resolveResilience,
  withResilience,
  WHOLE_CONSUMER_KEY,
} from './resilience';
export type {
  Admitted,
  Intake,
  IntakeDriving,
  Refused,
  ResilienceGate,
  ResilienceOptions,
  ResilientInbox,
  ResolvedResilience,
} from './resilience';
export {
  durationOption,
  integerOption,
  optionalBoolean,
  optionalFunction,
  optionKeys,
  positiveIntegerOption,
  rejectUnknownOptions,
} from './config/options';
export { resolveLogger } from './observability/logger';
export { resolveMeter, METER_NAME } from './observability/metrics';
export {
  carriedContext,
  failSpan,
  inSpan,
  tracer,
  TRACER_NAME,
  type MessagingSystem,
} from './observability/tracing';
export {
  ERROR_TEXT_LIMIT,
  NEVER_ABORTED,
  asError,
  crashPoint,
  errorMessage,
  errorText,
  finishesWithin,
  sleep,
  withTimeout,
} from './common';
