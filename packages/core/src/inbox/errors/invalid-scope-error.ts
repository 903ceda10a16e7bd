import { JustonceError } from '../../errors/justonce-error';

/** A delivery's scope is not a non-empty string of at most 255 UTF-8 bytes; it is dead-lettered. */
export class InvalidScopeError extends JustonceError {
  constructor(message: string, details: Record<string, unknown> = {}) {
    super('INVALID_SCOPE', message, { retriable: false, details });
  }
}
