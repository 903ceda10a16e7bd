import { JustonceError } from '@justonce/core';

/**
 * SQS did not accept a message: the batch entry failed (with the service's error code in
 * `details.sqsCode`) or the whole request failed, after the publisher's own retries.
 * `retriable` is false only for faults SQS blames on the sender.
 */
export class SqsPublishError extends JustonceError {
  constructor(
    message: string,
    details: { messageId: string; destination: string; sqsCode?: string; senderFault?: boolean },
    options: { retriable: boolean; cause?: unknown },
  ) {
    super('SQS_PUBLISH_FAILED', message, {
      retriable: options.retriable,
      details,
      cause: options.cause,
    });
  }
}
