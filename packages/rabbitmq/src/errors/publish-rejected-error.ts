import { JustonceError } from '@justonce/core';

/**
 * The broker did not confirm a publish: it answered with a negative acknowledgement, the
 * target exchange does not exist, or no confirmation came within `confirmTimeoutMs`.
 * Retriable.
 */
export class PublishRejectedError extends JustonceError {
  constructor(
    message: string,
    options: { cause?: unknown; details?: Record<string, unknown> } = {},
  ) {
    super('RABBIT_PUBLISH_REJECTED', message, {
      retriable: true,
      cause: options.cause,
      details: options.details ?? {},
    });
  }
}
