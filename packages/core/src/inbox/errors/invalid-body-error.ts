import { JustonceError } from '../../errors/justonce-error';

/** A delivery's body is neither bytes nor a string; it is dead-lettered (kept as text). */
export class InvalidBodyError extends JustonceError {
  constructor(details: Record<string, unknown> = {}) {
    super('INVALID_BODY', 'the delivery body is neither a Uint8Array nor a string', {
      retriable: false,
      details,
    });
  }
}
