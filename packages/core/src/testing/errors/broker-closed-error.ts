import { JustonceError } from '../../errors';

/** The in-memory broker was used after `close()`. */
export class BrokerClosedError extends JustonceError {
  constructor(operation: string) {
    super('BROKER_CLOSED', `the in-memory broker is closed: cannot ${operation}`, {
      retriable: false,
      details: { operation },
    });
  }
}
