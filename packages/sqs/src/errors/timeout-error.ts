import { JustonceError } from '@justonce/core';

/**
 * An SQS call did not answer within its time limit (`timeouts.requestMs`, plus the long
 * poll for `ReceiveMessage`). Retriable: the network or the service is the problem, not the
 * message. `details.operation` names the call, `details.limitMs` the limit.
 */
export class SqsTimeoutError extends JustonceError {
  constructor(details: { operation: string; limitMs: number }) {
    super('SQS_TIMEOUT', `SQS ${details.operation} did not answer within ${details.limitMs} ms`, {
      retriable: true,
      details,
    });
  }
}
