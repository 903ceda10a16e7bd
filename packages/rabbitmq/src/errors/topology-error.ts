import { JustonceError } from '@justonce/core';

/**
 * The broker refused to declare or check the consumer's queues and exchanges: a queue that
 * exists with different arguments, an exchange of another type, or (with
 * `declareTopology: false`) one that does not exist. Not retriable without a change.
 */
export class RabbitTopologyError extends JustonceError {
  constructor(
    message: string,
    options: { cause?: unknown; details?: Record<string, unknown> } = {},
  ) {
    super('RABBIT_TOPOLOGY', message, {
      retriable: false,
      cause: options.cause,
      details: options.details ?? {},
    });
  }
}
