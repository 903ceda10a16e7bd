import { JustonceError } from '@justonce/core';

/** The broker did not accept a message the relay asked to publish. */
export class KafkaPublishError extends JustonceError {
  constructor(
    message: string,
    details: { topic: string; messageId: string },
    options: { retriable: boolean; cause: unknown },
  ) {
    super('KAFKA_PUBLISH_FAILED', message, {
      retriable: options.retriable,
      details,
      cause: options.cause,
    });
  }
}
