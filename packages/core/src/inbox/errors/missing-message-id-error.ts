import { JustonceError } from '../../errors/justonce-error';

/** A delivery carried no message id, so it cannot be deduplicated; it is dead-lettered. */
export class MissingMessageIdError extends JustonceError {
  constructor(details: Record<string, unknown> = {}) {
    super('MISSING_MESSAGE_ID', 'the delivery carries no message id', {
      retriable: false,
      details,
    });
  }
}
