import { JustonceError } from '../../errors/justonce-error';

/**
 * Throw this from a handler when retrying cannot help (a validation failure, a reference
 * to something that will never exist): the inbox dead-letters the message at once with
 * reason `NON_RETRIABLE` instead of waiting for `maxAttempts`. Any justonce error whose
 * `retriable` is false has the same effect.
 *
 * @example
 * ```ts
 * if (!order) throw new FinalError(`order ${id} does not exist`);
 * ```
 */
export class FinalError extends JustonceError {
  constructor(
    message: string,
    options: { cause?: unknown; details?: Record<string, unknown> } = {},
  ) {
    super('FINAL', message, { retriable: false, cause: options.cause, details: options.details });
  }
}
