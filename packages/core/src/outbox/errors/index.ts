export { DuplicateMessageIdError } from './duplicate-message-id-error';
export { InvalidEventError } from './invalid-event-error';
export type { InvalidEventField } from './invalid-event-error';
export { NotATransactionError } from './not-a-transaction-error';
