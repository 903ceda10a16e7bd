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

/** A consumer or publisher was used in a state that does not allow it (e.g. started twice). */
export class KafkaStateError extends JustonceError {
  constructor(message: string, details: Record<string, unknown> = {}) {
    super('KAFKA_INVALID_STATE', message, { retriable: false, details });
  }
}

/**
 * Kafka did not answer in time: a send (connecting included) took longer than the
 * publisher's `sendTimeoutMs`. Retriable; the relay reports it as an outage.
 */
export class KafkaTimeoutError extends JustonceError {
  constructor(message: string, details: { topic: string; timeoutMs: number }) {
    super('KAFKA_TIMEOUT', message, { retriable: true, details });
  }
}
