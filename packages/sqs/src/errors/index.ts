export { SqsMessageTooLargeError } from './message-too-large-error';
export { SqsTooManyAttributesError } from './too-many-attributes-error';
export { SqsInvalidMessageError } from './invalid-message-error';
export { SqsPublishError } from './publish-error';
export { SqsDeadLetterError } from './dead-letter-error';
export { SqsStateError } from './state-error';
export { SqsQueueError } from './queue-error';
export { SqsTimeoutError } from './timeout-error';
