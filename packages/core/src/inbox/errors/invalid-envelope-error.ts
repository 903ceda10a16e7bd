import { JustonceError } from '../../errors/justonce-error';

/**
 * `process` or `processBatch` was given something that is not an envelope object (`null`,
 * a string, a number). There is nothing to dead-letter, so the call is refused before any
 * statement runs: this is a bug in the caller, not bad input from a broker.
 */
export class InvalidEnvelopeError extends JustonceError {
  constructor(message: string, details: Record<string, unknown> = {}) {
    super('INVALID_ENVELOPE', message, { retriable: false, details });
  }
}
