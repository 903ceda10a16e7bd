import { JustonceError } from '@justonce/core';

/** A consumer or publisher was used in a state that does not allow it (e.g. started twice). */
export class KafkaStateError extends JustonceError {
  constructor(message: string, details: Record<string, unknown> = {}) {
    super('KAFKA_INVALID_STATE', message, { retriable: false, details });
  }
}
