import { JustonceError } from '@justonce/core';

/**
 * A message is larger than the queue accepts (body plus message attributes, as SQS counts
 * them). Not retriable: sending the same message again cannot succeed.
 */
export class SqsMessageTooLargeError extends JustonceError {
  constructor(details: { messageId: string; destination: string; bytes: number; limit: number }) {
    super(
      'SQS_MESSAGE_TOO_LARGE',
      `message ${details.messageId} is ${details.bytes} bytes, over the limit of ${details.limit} bytes (body and attributes)`,
      { retriable: false, details },
    );
  }
}
