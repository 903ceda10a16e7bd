import { JustonceError } from '@justonce/core';
import type { HeldResponse } from '../engine/response';

/**
 * Thrown out of the operation's effect to roll the business transaction back and leave the
 * key retriable (`retriable: true`, so operations records FAILED_RETRIABLE): the handler
 * answered with a status the route does not store (a 5xx by default), or it threw. The
 * engine catches it after the rollback and sends the held response or rethrows the
 * handler's own error; it never reaches the application. @internal
 */
export class RollbackError extends JustonceError {
  /** What the handler did: the response it produced, or the error it threw. */
  readonly outcome:
    | { readonly kind: 'response'; readonly response: HeldResponse }
    | { readonly kind: 'threw'; readonly error: unknown };

  constructor(outcome: RollbackError['outcome']) {
    super(
      'HTTP_ROLLBACK',
      outcome.kind === 'response'
        ? `the handler answered ${outcome.response.status}, a status this route does not store`
        : 'the handler threw',
      { retriable: true, cause: outcome.kind === 'threw' ? outcome.error : undefined },
    );
    this.outcome = outcome;
  }
}
