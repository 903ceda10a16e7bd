import { ConfigurationError, type Logger, errorChain } from '@justonce/core';
import {
  messageHeaders,
  optionKeys,
  rejectUnknownOptions,
  resolveLogger,
  type OutgoingMessage,
  type Publisher,
  type PublishResult,
  errorMessage,
} from '@justonce/core/transport';
import {
  kafkajsClient,
  resolveKafkaTimeouts,
  validateBrokers,
  type KafkaClient,
  type KafkaProducerClient,
  type KafkaTimeouts,
} from './client';
import { isTopicName } from './consumer-options';
import { KafkaPublishError, KafkaStateError, KafkaTimeoutError } from './errors';
import { createProducerSlot, producerStateError } from './producer-recovery';

/** Options of {@link createKafkaPublisher}. */
export interface KafkaPublisherOptions {
  /** The Kafka client. Default: kafkajs built from `brokers` and `clientId`. */
  readonly kafka?: KafkaClient;
  /** Bootstrap brokers, used when `kafka` is not given. */
  readonly brokers?: readonly string[];
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

/** The relay's Kafka publisher: a core {@link Publisher} that can also connect ahead of time. */
export interface KafkaPublisher extends Publisher {
  /**
   * Connects the producer now (the first `publish` otherwise does it). Resolves once the
   * producer is ready; a no-op for a producer you passed in.
   */
  connect(): Promise<void>;
}

/** Kafka error types that no retry can fix. */
const PERMANENT = new Set([
  'MESSAGE_TOO_LARGE',
  'RECORD_LIST_TOO_LARGE',
  'INVALID_RECORD',
  'INVALID_TOPIC_EXCEPTION',
  'TOPIC_AUTHORIZATION_FAILED',
  'CLUSTER_AUTHORIZATION_FAILED',
  'INVALID_REQUIRED_ACKS',
  'UNSUPPORTED_FOR_MESSAGE_FORMAT',
]);

/**
 * The relay's Kafka publisher: an idempotent producer that waits for acknowledgement from
 * all in-sync replicas (`acks=-1`). The record key is the outbox partition key, so the
 * outbox's per-key order becomes per-partition order in Kafka; headers carry `message-id`
 * and whatever the outbox recorded (`causation-id`, `correlation-id`, `traceparent`,
 * `tracestate`, `tenant`, …).
 *
 * Messages are sent one request per destination topic, topics in parallel. Results are
 * per message, in input order; when a topic's request fails, every message of that topic
 * in the call is reported failed (some may have been written: the relay publishes them
 * again with the same message id, which downstream inboxes drop as duplicates).
 *
 * When the broker refuses the producer's idempotence state (`OUT_OF_ORDER_SEQUENCE_NUMBER`,
 * `UNKNOWN_PRODUCER_ID`, `INVALID_PRODUCER_EPOCH`, … — e.g. after a topic was re-created or a
 * broker lost part of its log), the publisher replaces its producer with a new one (new
 * producer id, sequences from zero), logs a warning and reports the batch as retriable. A
 * producer passed as `producer` cannot be replaced; the publisher only warns.
 */
export function createKafkaPublisher(options: KafkaPublisherOptions): KafkaPublisher {
  // `?.`: options that are not an object are refused by `validate`, not met with a TypeError.
  const { retries, timeout, sendTimeoutMs, logger } = validate(options);
  const owns = options.producer === undefined;
  const kafka =
    options.kafka ??
    (owns
      ? kafkajsClient({
          brokers: options.brokers ?? [],
          clientId: options.clientId ?? 'justonce-relay',
          timeouts: options.timeouts,
          logger: options.logger,
        })
      : undefined);
  const given = options.producer;
  const slot = createProducerSlot({
    owns,
    logger,
    sendTimeoutMs,
    create: () =>
      given ?? kafka!.producer({ idempotent: true, maxInFlightRequests: 1, retry: { retries } }),
  });
  let closing: Promise<void> | undefined;
  /** When the current outage was first seen; undefined while sends succeed. */
  let outageSince: number | undefined;

  /** One warning per outage, one line when it ends: a partition must not pass in silence. */
  const noteOutage = (topic: string, cause: unknown): void => {
    if (outageSince !== undefined) return;
    outageSince = Date.now();
    logger.warn('kafka publisher cannot reach the broker; the relay retries without charging', {
      topic,
      error: errorMessage(cause),
    });
  };
  const noteDelivered = (): void => {
    if (outageSince === undefined) return;
    const outageMs = Date.now() - outageSince;
    outageSince = undefined;
    logger.info('kafka publisher reaches the broker again', { outageMs });
  };

  async function sendTopic(
    topic: string,
    messages: readonly OutgoingMessage[],
  ): Promise<PublishResult[]> {
    if (!isTopicName(topic)) {
      const error = new KafkaPublishError(
        `invalid topic name ${JSON.stringify(topic)}`,
        { topic, messageId: '' },
        {
          retriable: false,
          cause: undefined,
        },
      );
      return messages.map((m) => ({ messageId: m.messageId, ok: false, error, retriable: false }));
    }
    try {
      await slot.send({
        topic,
        acks: -1,
        timeout,
        messages: messages.map((m) => ({
          key: m.key,
          value: Buffer.from(m.payload.buffer, m.payload.byteOffset, m.payload.byteLength),
          headers: messageHeaders(m),
        })),
      });
      noteDelivered();
      return messages.map((m) => ({ messageId: m.messageId, ok: true }));
    } catch (cause) {
      // A broken producer was replaced (or cannot be): the batch goes again on the new one.
      const retriable = producerStateError(cause) !== undefined || isRetriable(cause);
      const unreachable = isBrokerOutage(cause);
      if (unreachable) noteOutage(topic, cause);
      const outage = producerStateError(cause) !== undefined || unreachable;
      return messages.map((m) => ({
        messageId: m.messageId,
        ok: false,
        retriable,
        outage,
        error: new KafkaPublishError(
          `kafka did not accept message ${m.messageId} for ${topic}: ${errorMessage(cause)}`,
          { topic, messageId: m.messageId },
          { retriable, cause },
        ),
      }));
    }
  }

  return {
    connect: () => {
      if (closing) return Promise.reject(new KafkaStateError('the Kafka publisher is closed'));
      return slot.connect();
    },
    async publish(messages) {
      if (closing) throw new KafkaStateError('the Kafka publisher is closed');
      if (messages.length === 0) return [];
      const byTopic = new Map<string, OutgoingMessage[]>();
      for (const m of messages) {
        const list = byTopic.get(m.destination);
        if (list) list.push(m);
        else byTopic.set(m.destination, [m]);
      }
      const resultsByTopic = await Promise.all(
        [...byTopic].map(async ([topic, list]) => [topic, await sendTopic(topic, list)] as const),
      );
      const byId = new Map<OutgoingMessage, PublishResult>();
      for (const [topic, results] of resultsByTopic) {
        byTopic.get(topic)!.forEach((m, i) => byId.set(m, results[i]!));
      }
      return messages.map((m) => byId.get(m)!);
    },
    close() {
      closing ??= slot.close();
      return closing;
    },
  };
}

/** kafkajs errors of a connection, a request or a broker that is not there (yet). */
const OUTAGE_NAMES: ReadonlySet<string> = new Set([
  'KafkaJSConnectionError',
  'KafkaJSConnectionClosedError',
  'KafkaJSRequestTimeoutError',
  'KafkaJSBrokerNotFound',
  'KafkaJSMetadataNotLoaded',
  'KafkaJSLockTimeout',
]);
/** Broker error types that say the cluster, not the message, is unwell. */
const OUTAGE_TYPES: ReadonlySet<string> = new Set([
  'LEADER_NOT_AVAILABLE',
  'NOT_LEADER_FOR_PARTITION',
  'NOT_ENOUGH_REPLICAS',
  'NOT_ENOUGH_REPLICAS_AFTER_APPEND',
  'REQUEST_TIMED_OUT',
  'NETWORK_EXCEPTION',
  'BROKER_NOT_AVAILABLE',
  'COORDINATOR_NOT_AVAILABLE',
  'KAFKA_STORAGE_ERROR',
]);

/** True when the send failed because of the cluster or the network, not the message. */
function isBrokerOutage(error: unknown): boolean {
  if (error instanceof KafkaTimeoutError) return true;
  for (const e of errorChain(error)) {
    if (typeof e.name === 'string' && OUTAGE_NAMES.has(e.name)) return true;
    if (typeof e.type === 'string' && OUTAGE_TYPES.has(e.type)) return true;
  }
  return false;
}

/** False when a cause anywhere in the chain says retrying cannot help. */
function isRetriable(error: unknown): boolean {
  for (const e of errorChain(error)) {
    if (typeof e.type === 'string' && PERMANENT.has(e.type)) return false;
  }
  return true;
}

const PUBLISHER_KEYS = optionKeys<KafkaPublisherOptions>()([
  'kafka',
  'brokers',
  'clientId',
  'producer',
  'timeouts',
  'retries',
  'ackTimeoutMs',
  'sendTimeoutMs',
  'logger',
]);

/** Checks the options; returns the settings with their defaults. */
function validate(options: KafkaPublisherOptions): {
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
