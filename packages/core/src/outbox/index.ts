export { createOutbox, bindOutbox } from './create-outbox';
export type { OutboxOptions } from './create-outbox';
export { deriveMessageId } from './message-id';
export { outboxChannel } from './channel';
export { NotATransactionError } from './not-a-transaction-error';
export { InvalidEventError } from './invalid-event-error';
export type { InvalidEventField } from './invalid-event-error';
export { DuplicateMessageIdError } from './duplicate-message-id-error';
export type { OutboxEvent, EventCause, AddOptions, Outbox, HandlerOutbox } from './types';
