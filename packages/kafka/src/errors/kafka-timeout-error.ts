import { JustonceError } from '@justonce/core';

/**
 * Kafka did not answer in time: a send (connecting included) took longer than the
 * publisher's `sendTimeoutMs`. Retriable; the relay reports it as an outage.
 */
export class KafkaTimeoutError extends JustonceError {
  constructor(message: string, details: { topic: string; timeoutMs: number }) {
    super('KAFKA_TIMEOUT', message, { retriable: true, details });
  }
}
