import { JustonceError } from '@justonce/core';

/**
 * An outbox destination that cannot name an AMQP target (see `parseDestination`). Not
 * retriable: publishing the same destination again cannot succeed.
 */
export class InvalidDestinationError extends JustonceError {
  constructor(message: string, destination: string) {
    super('RABBIT_INVALID_DESTINATION', message, { retriable: false, details: { destination } });
  }
}
