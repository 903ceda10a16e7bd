import {
  ConfigurationError,
  messageHeaders,
  optionKeys,
  rejectUnknownOptions,
  silentLogger,
  type Logger,
  type OutgoingMessage,
  type Publisher,
  type PublishResult,
  errorChain,
} from '@justonce/core';
import { kafkajsClient, type KafkaClient, type KafkaProducerClient } from './client';
import { isTopicName } from './consumer';
import { KafkaPublishError, KafkaStateError } from './errors';
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
  /** Milliseconds the broker may take to acknowledge one produce request. Default 30 000. */
  readonly ackTimeoutMs?: number;
  /** Where producer rebuilds (see {@link createKafkaPublisher}) are reported. Default silent. */
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
  const retries = options?.retries ?? 5;
  const timeout = options?.ackTimeoutMs ?? 30_000;
  validate(options, retries, timeout);
  const owns = options.producer === undefined;
  const kafka =
    options.kafka ??
    (owns
      ? kafkajsClient({
          brokers: options.brokers ?? [],
          clientId: options.clientId ?? 'justonce-relay',
        })
      : undefined);
  const given = options.producer;
  const slot = createProducerSlot({
    owns,
    logger: options.logger ?? silentLogger,
    create: () =>
      given ?? kafka!.producer({ idempotent: true, maxInFlightRequests: 1, retry: { retries } }),
  });
  let closing: Promise<void> | undefined;

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
      return messages.map((m) => ({ messageId: m.messageId, ok: true }));
    } catch (cause) {
      // A broken producer was replaced (or cannot be): the batch goes again on the new one.
      const retriable = producerStateError(cause) !== undefined || isRetriable(cause);
      const outage = producerStateError(cause) !== undefined || isBrokerOutage(cause);
      return messages.map((m) => ({
        messageId: m.messageId,
        ok: false,
        retriable,
        outage,
        error: new KafkaPublishError(
          `kafka did not accept message ${m.messageId} for ${topic}: ${cause instanceof Error ? cause.message : String(cause)}`,
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
  'retries',
  'ackTimeoutMs',
  'logger',
]);

function validate(options: KafkaPublisherOptions, retries: number, timeout: number): void {
  const fail = (message: string, details: Record<string, unknown> = {}): never => {
    throw new ConfigurationError(`createKafkaPublisher: ${message}`, details);
  };
  if (typeof options !== 'object' || options === null) fail('options are required');
  rejectUnknownOptions(options, PUBLISHER_KEYS, 'createKafkaPublisher');
  const given = (['kafka', 'brokers', 'producer'] as const).filter((k) => options[k] !== undefined);
  if (given.length !== 1) fail('give exactly one of kafka, brokers and producer', { given });
  if (
    options.brokers !== undefined &&
    (!Array.isArray(options.brokers) || options.brokers.length === 0)
  ) {
    fail('brokers must list at least one broker');
  }
  if (!Number.isInteger(retries) || retries < 1)
    fail('retries must be a positive integer', { retries });
  if (!Number.isInteger(timeout) || timeout < 1)
    fail('ackTimeoutMs must be a positive integer', { timeout });
}
