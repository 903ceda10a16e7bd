import { JustonceError } from '../../errors/justonce-error';

/**
 * A delivery's body is unusable as given: neither bytes nor a string, or a string with a lone
 * UTF-16 surrogate (it has no exact UTF-8 bytes). It is dead-lettered, kept exactly.
 */
export class InvalidBodyError extends JustonceError {
  constructor(
    message = 'the delivery body is neither a Uint8Array nor a string',
    details: Record<string, unknown> = {},
  ) {
    super('INVALID_BODY', message, { retriable: false, details });
  }
}
