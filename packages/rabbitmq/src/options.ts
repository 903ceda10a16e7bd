import { ConfigurationError } from '@justonce/core';

/** AMQP short strings (queue and exchange names, routing keys) hold at most 255 bytes. */
export const MAX_NAME_BYTES = 255;

/** Validates a queue or exchange name the consumer declares. @internal */
export function validateName(value: unknown, what: string): string {
  if (typeof value !== 'string' || value === '') {
    throw new ConfigurationError(`${what} must be a non-empty string`, { [what]: value });
  }
  if (Buffer.byteLength(value, 'utf8') > MAX_NAME_BYTES) {
    throw new ConfigurationError(`${what} must be at most ${MAX_NAME_BYTES} bytes`, {
      [what]: value,
    });
  }
  if (value.startsWith('amq.')) {
    throw new ConfigurationError(`${what} cannot start with "amq." (reserved by the broker)`, {
      [what]: value,
    });
  }
  return value;
}
