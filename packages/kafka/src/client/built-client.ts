import { ConfigurationError } from '@justonce/core';
import type { KafkaClient } from './types';
import { kafkajsClient, type KafkajsClientOptions } from './kafkajs/client';
import { platformaticClient } from './platformatic/client';

/** The clients justonce can build from `brokers`. */
export const KAFKA_CLIENT_NAMES = ['kafkajs', 'platformatic'] as const;

/**
 * Which client justonce builds from `brokers`: `kafkajs` (the default) or `platformatic`
 * (@platformatic/kafka). See the package README, "Choosing the client".
 */
export type KafkaClientName = (typeof KAFKA_CLIENT_NAMES)[number];

/**
 * Refuses a `client` that is not one of {@link KAFKA_CLIENT_NAMES}, or one given beside a
 * client or producer of the caller's own (`given` names it). @internal
 */
export function validateClientName(
  client: unknown,
  given: string | undefined,
  context: string,
): void {
  if (client === undefined) return;
  if (!(KAFKA_CLIENT_NAMES as readonly unknown[]).includes(client)) {
    throw new ConfigurationError(
      `${context}: client must be one of ${KAFKA_CLIENT_NAMES.join(', ')}`,
      { client },
    );
  }
  if (given !== undefined) {
    throw new ConfigurationError(
      `${context}: client chooses the client built from brokers; it cannot be given with ${given}`,
      { client },
    );
  }
}

/** Builds the named client (default kafkajs) from the shared client options. @internal */
export function buildKafkaClient(
  name: KafkaClientName | undefined,
  options: KafkajsClientOptions,
): KafkaClient {
  return name === 'platformatic' ? platformaticClient(options) : kafkajsClient(options);
}
