export { DeadLetterPublishError } from './dead-letter-publish-error';
export { KafkaPublishError } from './kafka-publish-error';
export { KafkaStateError } from './kafka-state-error';
export { KafkaTimeoutError } from './kafka-timeout-error';
