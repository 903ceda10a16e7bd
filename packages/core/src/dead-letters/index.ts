export { createDeadLetters } from './create-dead-letters';
export { DeadLetterNotFoundError } from './errors/dead-letter-not-found-error';
export type { DeadLetter, DeadLetters, DeadLetterReason, ListDeadLettersOptions } from './types';
