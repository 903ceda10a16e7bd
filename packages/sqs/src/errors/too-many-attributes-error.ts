import { JustonceError } from '@justonce/core';

/**
 * A message would carry more message attributes than SQS allows (10, the `message-id`
 * attribute included). Not retriable: drop headers before adding the event to the outbox.
 */
export class SqsTooManyAttributesError extends JustonceError {
  constructor(details: { messageId: string; attributes: readonly string[]; limit: number }) {
    super(
      'SQS_TOO_MANY_ATTRIBUTES',
      `message ${details.messageId} needs ${details.attributes.length} message attributes (${details.attributes.join(', ')}); SQS allows ${details.limit}`,
      { retriable: false, details },
    );
  }
}
