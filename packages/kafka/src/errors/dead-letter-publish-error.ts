import { JustonceError } from '@justonce/core';

/**
 * A record could not be forwarded to its dead-letter topic. The record's offset is not
 * committed; the partition is paused and the record is delivered again.
 */
export class DeadLetterPublishError extends JustonceError {
  constructor(
    message: string,
    details: { topic: string; partition: number; offset: string; deadLetterTopic: string },
    cause: unknown,
  ) {
    super('KAFKA_DEAD_LETTER_PUBLISH_FAILED', message, { retriable: true, details, cause });
  }
}
