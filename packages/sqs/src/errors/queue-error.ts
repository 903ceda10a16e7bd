import { JustonceError } from '@justonce/core';

/**
 * A queue could not be found or described (GetQueueUrl, GetQueueAttributes). Retriable:
 * the queue may be created, or the service may answer, later.
 */
export class SqsQueueError extends JustonceError {
  constructor(message: string, details: Record<string, unknown>, cause: unknown) {
    super('SQS_QUEUE_UNAVAILABLE', message, { retriable: true, details, cause });
  }
}
