import { JustonceError } from '../../errors/justonce-error';

/**
 * `outbox.add` was given something other than an open knex transaction. Events are only ever
 * written inside the caller's transaction, so nothing can bypass the outbox by accident.
 */
export class NotATransactionError extends JustonceError {
  constructor(message: string, details: Record<string, unknown> = {}) {
    super('NOT_A_TRANSACTION', message, { retriable: false, details });
  }
}
