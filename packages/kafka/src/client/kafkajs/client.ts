import { ConfigurationError, type Logger } from '@justonce/core';
import { optionKeys, rejectUnknownOptions, resolveLogger } from '@justonce/core/transport';
import { Kafka, logLevel, type logCreator, type ProducerConfig } from 'kafkajs';
import type { KafkaClient, KafkaConsumerClient, KafkaInstrumentationEvent } from '../types';
import { createConnectionRegistry } from './dead-connections';

/**
 * Client-side time limits of the kafkajs client justonce builds (from `brokers`). A client you
 * pass as `kafka` keeps its own settings.
 */
export interface KafkaTimeouts {
  /**
   * Milliseconds to open a TCP connection to a broker (kafkajs `connectionTimeout`). Default
   * 3 000. A partitioned broker drops the SYN; without a limit the kernel would retry for
   * minutes.
   */
  readonly connectMs?: number;
  /**
   * Milliseconds to wait for the answer to one request (kafkajs `requestTimeout`, enforced:
   * `enforceRequestTimeout: true`). Default 10 000 (kafkajs: 30 000). Requests that may block
   * on the broker wait longer: a fetch up to `maxWaitTimeInMs` + 100, a group join up to
   * `rebalanceTimeout` + 5 000. Keep it above the publisher's `ackTimeoutMs`.
   */
  readonly requestMs?: number;
}

/** The defaults of {@link KafkaTimeouts}. */
export const DEFAULT_KAFKA_TIMEOUTS: Readonly<Required<KafkaTimeouts>> = Object.freeze({
  connectMs: 3_000,
  requestMs: 10_000,
});

/** Options of {@link kafkajsClient}. */
export interface KafkajsClientOptions {
  /** Bootstrap brokers, `host:port`. */
  readonly brokers: readonly string[];
  /** Client id reported to the brokers. Default `justonce`. */
  readonly clientId?: string;
  /** Connection and request time limits; see {@link KafkaTimeouts}. */
  readonly timeouts?: KafkaTimeouts;
  /**
   * Where kafkajs's own log lines go, at debug level. Default: nowhere. justonce reports what
   * matters (an outage, a recovery, a crash) through its own lines, once each; kafkajs logs
   * every failed request, which during an outage is a flood.
   */
  readonly logger?: Logger;
}

const CLIENT_KEYS = optionKeys<KafkajsClientOptions>()([
  'brokers',
  'clientId',
  'timeouts',
  'logger',
]);

/** kafkajs's log lines as debug lines of `logger`, tagged with their namespace. */
function kafkajsLogCreator(logger: Logger): logCreator {
  return () =>
    ({ namespace, level, log }) => {
      const { message, ...fields } = log;
      logger.debug(`kafkajs: ${String(message)}`, {
        ...fields,
        namespace,
        level: logLevel[level],
      });
    };
}
const TIMEOUT_KEYS = optionKeys<KafkaTimeouts>()(['connectMs', 'requestMs']);

/**
 * `host:port` with a port from 1 to 65535. No IPv6 literal, bracketed or not: kafkajs splits
 * the address at its first `:`, so it would try to resolve the host `[` and never connect.
 */
function isBroker(value: unknown): boolean {
  const match = typeof value === 'string' ? /^([^\s:[\]]+):(\d{1,5})$/.exec(value) : null;
  return match !== null && Number(match[2]) >= 1 && Number(match[2]) <= 65_535;
}

/**
 * Refuses `brokers` unless it lists at least one address and each is a `host:port` kafkajs
 * can connect to. `context` names the caller in the error. @internal
 */
export function validateBrokers(brokers: unknown, context: string): void {
  if (!Array.isArray(brokers) || brokers.length === 0 || !brokers.every(isBroker)) {
    throw new ConfigurationError(
      `${context}: brokers must list at least one host:port, each port from 1 to 65535 ` +
        '(an IPv6 literal such as [::1]:9092 cannot be used: kafkajs cannot connect to one)',
      { brokers },
    );
  }
}

/**
 * Validates `timeouts` (unknown keys refused, each a positive integer of at most 10 minutes)
 * and fills in {@link DEFAULT_KAFKA_TIMEOUTS}. `context` names the caller in errors.
 * @internal
 */
export function resolveKafkaTimeouts(
  timeouts: KafkaTimeouts | undefined,
  context: string,
): Required<KafkaTimeouts> {
  if (timeouts !== undefined && (typeof timeouts !== 'object' || timeouts === null)) {
    throw new ConfigurationError(`${context}: timeouts must be an object`, { timeouts });
  }
  rejectUnknownOptions(timeouts, TIMEOUT_KEYS, context, 'timeouts');
  const resolved = { ...DEFAULT_KAFKA_TIMEOUTS };
  for (const key of TIMEOUT_KEYS) {
    const value = timeouts?.[key];
    if (value === undefined) continue;
    if (!Number.isInteger(value) || value < 1 || value > 600_000) {
      throw new ConfigurationError(
        `${context}: timeouts.${key} must be an integer from 1 to 600000`,
        { [key]: value },
      );
    }
    resolved[key] = value;
  }
  return resolved;
}

/**
 * The default client: a kafkajs `Kafka` instance with the time limits of `timeouts` and its
 * own warnings and errors sent to `logger` at debug level (justonce reports what matters
 * through its own lines). A connection a request timed out on is closed, so that kafkajs reconnects rather
 * than wait on it (see `dead-connections.ts`).
 */
export function kafkajsClient(options: KafkajsClientOptions): KafkaClient {
  rejectUnknownOptions(options, CLIENT_KEYS, 'kafkajsClient');
  const { brokers, clientId } = options;
  validateBrokers(brokers, 'kafkajsClient');
  if (clientId !== undefined && (typeof clientId !== 'string' || clientId === '')) {
    throw new ConfigurationError('kafkajsClient: clientId must be a non-empty string', {
      clientId,
    });
  }
  const timeouts = resolveKafkaTimeouts(options.timeouts, 'kafkajsClient');
  const logger = resolveLogger(options.logger);
  const connections = createConnectionRegistry();
  const kafka = new Kafka({
    clientId: options.clientId ?? 'justonce',
    brokers: [...options.brokers],
    connectionTimeout: timeouts.connectMs,
    requestTimeout: timeouts.requestMs,
    // kafkajs's default too, set so that no version change can take the limit away.
    enforceRequestTimeout: true,
    socketFactory: connections.socketFactory,
    logLevel: logLevel.WARN,
    logCreator: kafkajsLogCreator(logger),
  });
  const closeOnTimeout = (event: KafkaInstrumentationEvent): void => {
    const broker = (event.payload as { broker?: unknown } | null)?.broker;
    if (typeof broker === 'string') connections.closeBroker(broker);
  };
  return {
    consumer(config) {
      const consumer: KafkaConsumerClient = kafka.consumer(config);
      consumer.on(
        consumer.events.REQUEST_TIMEOUT ?? 'consumer.network.request_timeout',
        closeOnTimeout,
      );
      return consumer;
    },
    producer(config) {
      const producer = kafka.producer(config as ProducerConfig | undefined);
      producer.on(producer.events.REQUEST_TIMEOUT, closeOnTimeout);
      return producer;
    },
  };
}
