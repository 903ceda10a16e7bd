import { JustonceError } from '@justonce/core';

/**
 * The publisher was used in a state that does not allow it: `publish` after `close`. (The
 * consumer's lifecycle errors are core's `ConsumerStateError`.)
 */
export class SqsStateError extends JustonceError {
  constructor(message: string, details: Record<string, unknown> = {}) {
    super('SQS_INVALID_STATE', message, { retriable: false, details });
  }
}
