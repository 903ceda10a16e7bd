import { JustonceError } from '../../errors/justonce-error';

/**
 * A delivery's message id is unusable: not a string, empty, or longer than the inbox's
 * `maxIdLength` (in UTF-8 bytes). The message is dead-lettered.
 */
export class InvalidMessageIdError extends JustonceError {
  constructor(message: string, details: Record<string, unknown> = {}) {
    super('INVALID_MESSAGE_ID', message, { retriable: false, details });
  }
}
