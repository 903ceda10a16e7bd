import { JustonceError } from '../../errors/justonce-error';

/**
 * A delivery's headers are unusable: not an object of strings, or a name or value that the
 * store cannot hold exactly (U+0000, a lone UTF-16 surrogate). The message is dead-lettered
 * with its headers kept exactly as given.
 */
export class InvalidHeadersError extends JustonceError {
  constructor(message: string, details: Record<string, unknown> = {}) {
    super('INVALID_HEADERS', message, { retriable: false, details });
  }
}
