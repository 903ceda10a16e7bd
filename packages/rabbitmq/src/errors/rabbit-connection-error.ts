import { JustonceError } from '@justonce/core';

/**
 * The broker could not be reached, refused the connection, or the connection or channel
 * closed underneath an operation. Retriable: the same operation may succeed after
 * reconnecting.
 */
export class RabbitConnectionError extends JustonceError {
  constructor(
    message: string,
    options: { cause?: unknown; details?: Record<string, unknown> } = {},
  ) {
    super('RABBIT_CONNECTION', message, {
      retriable: true,
      cause: options.cause,
      details: options.details ?? {},
    });
  }
}
