import { ConfigurationError, type Logger } from '@justonce/core';
import { optionKeys, rejectUnknownOptions, resolveLogger } from '@justonce/core/transport';
import type { KafkaClient } from '../types';
import { resolveKafkaTimeouts, validateBrokers, type KafkaTimeouts } from '../kafkajs/client';
import { createPlatformaticConsumer } from './consumer';
import { createPlatformaticProducer } from './producer';

/** Options of {@link platformaticClient}: the same as those of `kafkajsClient`. */
export interface PlatformaticClientOptions {
  /** Bootstrap brokers, `host:port`. */
  readonly brokers: readonly string[];
  /** Client id reported to the brokers. Default `justonce`. */
  readonly clientId?: string;
  /**
   * Connection and request time limits; see {@link KafkaTimeouts}. `connectMs` becomes
   * @platformatic/kafka's `connectTimeout`, `requestMs` its `requestTimeout` (and `timeout`):
   * a request unanswered that long fails and its connection is closed. The limit applies to
   * group joins too, which kafkajs lets wait for the rebalance: a join that waits longer for
   * the other members is sent again.
   */
  readonly timeouts?: KafkaTimeouts;
  /** Where the adapter's own debug lines go. Default: nowhere. */
  readonly logger?: Logger;
}

/** What the consumers and producers of one client share. @internal */
export interface PlatformaticBase {
  readonly clientId: string;
  readonly bootstrapBrokers: string[];
  readonly connectTimeout: number;
  readonly timeout: number;
  readonly logger: Logger;
}

const CLIENT_KEYS = optionKeys<PlatformaticClientOptions>()([
  'brokers',
  'clientId',
  'timeouts',
  'logger',
]);

/**
 * A {@link KafkaClient} on @platformatic/kafka (pure JavaScript, maintained): what
 * `client: 'platformatic'` builds from `brokers`. Its consumer adapts the library's message
 * stream to the per-partition batches justonce's consumer works on (see `consumer.ts`); its
 * producer sends with the library's idempotent producer. Validated like `kafkajsClient`.
 */
export function platformaticClient(options: PlatformaticClientOptions): KafkaClient {
  rejectUnknownOptions(options, CLIENT_KEYS, 'platformaticClient');
  validateBrokers(options.brokers, 'platformaticClient');
  const { clientId } = options;
  if (clientId !== undefined && (typeof clientId !== 'string' || clientId === '')) {
    throw new ConfigurationError('platformaticClient: clientId must be a non-empty string', {
      clientId,
    });
  }
  const timeouts = resolveKafkaTimeouts(options.timeouts, 'platformaticClient');
  const base: PlatformaticBase = {
    clientId: clientId ?? 'justonce',
    bootstrapBrokers: [...options.brokers],
    connectTimeout: timeouts.connectMs,
    timeout: timeouts.requestMs,
    logger: resolveLogger(options.logger),
  };
  return {
    consumer: (config) => createPlatformaticConsumer(base, config),
    producer: (config) => createPlatformaticProducer(base, config),
  };
}
