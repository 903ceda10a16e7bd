export { createOutbox, bindOutbox } from './create-outbox';
export type { OutboxOptions } from './create-outbox';
export { deriveMessageId } from './message-id';
export { outboxChannel } from './channel';
export { NotATransactionError, InvalidEventError, DuplicateMessageIdError } from './errors';
export type { InvalidEventField } from './errors';
export type {
  OutboxEvent,
  EventCause,
  AddOptions,
  AddMessageOptions,
  MessageEventOptions,
  Outbox,
  HandlerOutbox,
} from './types';
