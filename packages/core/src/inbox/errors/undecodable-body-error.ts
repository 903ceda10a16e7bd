import { errorMessage } from '../../common/errors';
import { JustonceError } from '../../errors/justonce-error';

/** The inbox's `decode` option threw for a body; the message is dead-lettered. */
export class UndecodableBodyError extends JustonceError {
  constructor(cause: unknown, details: Record<string, unknown> = {}) {
    const reason = errorMessage(cause);
    super('UNDECODABLE_BODY', `the body could not be decoded: ${reason}`, {
      retriable: false,
      cause,
      details,
    });
  }
}
