import { JustonceError } from '@justonce/core';

/**
 * A dead-lettered message could not be sent to the dead-letter queue. The message is not
 * deleted: it becomes visible again after the visibility timeout, the inbox answers the
 * redelivery from its record, and the consumer tries the dead-letter queue again.
 */
export class SqsDeadLetterError extends JustonceError {
  constructor(details: { sqsMessageId: string; deadLetterQueueUrl: string }, cause: unknown) {
    super(
      'SQS_DEAD_LETTER_FAILED',
      `could not send message ${details.sqsMessageId} to the dead-letter queue ${details.deadLetterQueueUrl}`,
      { retriable: true, details, cause },
    );
  }
}
