import { ConfigurationError, type Logger } from '@justonce/core';
import { optionKeys, rejectUnknownOptions, resolveLogger } from '@justonce/core/transport';
import type { KafkaClient, KafkaProducerClient } from '../client/types';
import {
  resolveKafkaTimeouts,
  validateBrokers,
  type KafkaTimeouts,
} from '../client/kafkajs/client';
import { validateClientName, type KafkaClientName } from '../client/built-client';

/** Options of {@link createKafkaPublisher}. */
export interface KafkaPublisherOptions {
  /** The Kafka client. Default: kafkajs built from `brokers` and `clientId`. */
  readonly kafka?: KafkaClient;
  /** Bootstrap brokers, used when `kafka` is not given. */
  readonly brokers?: readonly string[];
  /**
   * The client built from `brokers`: `kafkajs` (default) or `platformatic`
   * (@platformatic/kafka). Refused with `kafka` or `producer`. See the package README,
   * "Choosing the client".
   */
  readonly client?: KafkaClientName;
  /** Client id, used when `kafka` is not given. Default `justonce-relay`. */
  readonly clientId?: string;
  /**
   * Connection and request time limits of the client built from `brokers` (see
   * {@link KafkaTimeouts}); refused with `kafka` or `producer`, whose own settings apply.
   */
  readonly timeouts?: KafkaTimeouts;
  /**
   * A producer you created and connected yourself; the publisher then neither connects nor
   * disconnects it. It should be idempotent. Default: an idempotent producer created from
   * the client.
   */
  readonly producer?: KafkaProducerClient;
  /**
   * Client-side retries of one send before the messages are reported as failed (the relay
   * then backs off and publishes them again). Default 5. kafkajs's own default for the
   * idempotent producer retries forever, which would hold the relay on one batch.
   */
  readonly retries?: number;
  /**
   * Milliseconds the broker may wait for the in-sync replicas before it answers a produce
   * request (Kafka's `timeout`). Default 5 000. Must be below `sendTimeoutMs` and, for a client
   * built from `brokers`, below `timeouts.requestMs`: the broker should answer before the
   * client gives up on it.
   */
  readonly ackTimeoutMs?: number;
  /**
   * Milliseconds one send to one topic may take, connecting and kafkajs's retries included,
   * before its messages are reported failed as an outage (retried by the relay, never charged)
   * and the producer is replaced. Default 8 000: below the relay's default `publishTimeoutMs`
   * (10 000), so the publisher answers before the relay gives up on the call.
   */
  readonly sendTimeoutMs?: number;
  /**
   * Where outages (the broker unreachable, and reachable again) and producer rebuilds (see
   * {@link createKafkaPublisher}) are reported. Default silent.
   */
  readonly logger?: Logger;
}

const PUBLISHER_KEYS = optionKeys<KafkaPublisherOptions>()([
  'kafka',
  'brokers',
  'client',
  'clientId',
  'producer',
  'timeouts',
  'retries',
  'ackTimeoutMs',
  'sendTimeoutMs',
  'logger',
]);

/** Checks the options; returns the settings with their defaults. @internal */
export function validatePublisherOptions(options: KafkaPublisherOptions): {
  retries: number;
  timeout: number;
  sendTimeoutMs: number;
  logger: Logger;
} {
  const fail = (message: string, details: Record<string, unknown> = {}): never => {
    throw new ConfigurationError(`createKafkaPublisher: ${message}`, details);
  };
  if (typeof options !== 'object' || options === null) fail('options are required');
  rejectUnknownOptions(options, PUBLISHER_KEYS, 'createKafkaPublisher');
  const retries = options.retries ?? 5;
  const timeout = options.ackTimeoutMs ?? 5_000;
  const sendTimeoutMs = options.sendTimeoutMs ?? 8_000;
  const given = (['kafka', 'brokers', 'producer'] as const).filter((k) => options[k] !== undefined);
  if (given.length !== 1) fail('give exactly one of kafka, brokers and producer', { given });
  if (options.brokers !== undefined) validateBrokers(options.brokers, 'createKafkaPublisher');
  validateClientName(
    options.client,
    options.kafka !== undefined ? 'kafka' : options.producer !== undefined ? 'producer' : undefined,
    'createKafkaPublisher',
  );
  if (!Number.isInteger(retries) || retries < 1)
    fail('retries must be a positive integer', { retries });
  if (!Number.isInteger(timeout) || timeout < 1)
    fail('ackTimeoutMs must be a positive integer', { timeout });
  if (!Number.isInteger(sendTimeoutMs) || sendTimeoutMs < 1)
    fail('sendTimeoutMs must be a positive integer', { sendTimeoutMs });
  if (timeout >= sendTimeoutMs) {
    fail('ackTimeoutMs must be below sendTimeoutMs', { ackTimeoutMs: timeout, sendTimeoutMs });
  }
  if (options.timeouts !== undefined && options.brokers === undefined) {
    fail('timeouts apply to the client built from brokers; configure the client you pass');
  }
  const { requestMs } = resolveKafkaTimeouts(options.timeouts, 'createKafkaPublisher');
  if (options.brokers !== undefined && timeout >= requestMs) {
    fail('ackTimeoutMs must be below timeouts.requestMs', { ackTimeoutMs: timeout, requestMs });
  }
  return { retries, timeout, sendTimeoutMs, logger: resolveLogger(options.logger) };
}
