import { JustonceError } from '../../errors';

/**
 * The in-memory broker did not become idle within the allowed time: deliveries were still
 * running, waiting for a redelivery, or ready in a consumed queue. `details` says which.
 */
export class IdleTimeoutError extends JustonceError {
  constructor(timeoutMs: number, pending: Readonly<Record<string, unknown>>) {
    super('IDLE_TIMEOUT', `the broker was not idle after ${timeoutMs} ms`, {
      retriable: false,
      details: { timeoutMs, ...pending },
    });
  }
}
