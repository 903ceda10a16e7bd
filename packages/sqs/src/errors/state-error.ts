import { JustonceError } from '@justonce/core';

/**
 * A worker or publisher was used in a state that does not allow it: `start` twice, `start`
 * after `stop`, `publish` after `close`.
 */
export class SqsStateError extends JustonceError {
  constructor(message: string, details: Record<string, unknown> = {}) {
    super('SQS_INVALID_STATE', message, { retriable: false, details });
  }
}
