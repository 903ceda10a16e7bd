import { errorChain, type Logger } from '@justonce/core';
import {
  messageHeaders,
  type OutgoingMessage,
  type PublishResult,
  errorMessage,
} from '@justonce/core/transport';
import { isTopicName } from '../consumer/options';
import { KafkaPublishError, KafkaTimeoutError } from '../errors';
import { producerStateError, type ProducerSlot } from './producer-recovery';
import { isUnreachable } from '../client/platformatic/errors';
import { isUntrustedAck } from './producer-slot';

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

/** What sending needs from the publisher that owns it. @internal */
export interface SendDeps {
  /** The current producer, replaced when its idempotence state broke. */
  readonly slot: ProducerSlot;
  /** `ackTimeoutMs`: how long the broker may wait for the in-sync replicas. */
  readonly timeout: number;
  /** Where an outage begins and ends. */
  readonly outage: OutageNotes;
}

/** Notes a send that could not reach the broker, and the first that did again. @internal */
export interface OutageNotes {
  unreachable(topic: string, cause: unknown): void;
  delivered(): void;
}

/** One warning per outage, one line when it ends: a partition must not pass in silence. @internal */
export function createOutageNotes(logger: Logger): OutageNotes {
  /** When the current outage was first seen; undefined while sends succeed. */
  let outageSince: number | undefined;
  return {
    unreachable(topic, cause) {
      if (outageSince !== undefined) return;
      outageSince = Date.now();
      logger.warn('kafka publisher cannot reach the broker; the relay retries without charging', {
        topic,
        error: errorMessage(cause),
      });
    },
    delivered() {
      if (outageSince === undefined) return;
      const outageMs = Date.now() - outageSince;
      outageSince = undefined;
      logger.info('kafka publisher reaches the broker again', { outageMs });
    },
  };
}

/**
 * Sends `messages` one request per destination topic, topics in parallel; the results are
 * per message, in input order. @internal
 */
export async function publishByTopic(
  send: SendDeps,
  messages: readonly OutgoingMessage[],
): Promise<PublishResult[]> {
  const byTopic = new Map<string, OutgoingMessage[]>();
  for (const m of messages) {
    const list = byTopic.get(m.destination);
    if (list) list.push(m);
    else byTopic.set(m.destination, [m]);
  }
  const resultsByTopic = await Promise.all(
    [...byTopic].map(async ([topic, list]) => [topic, await sendTopic(send, topic, list)] as const),
  );
  const byId = new Map<OutgoingMessage, PublishResult>();
  for (const [topic, results] of resultsByTopic) {
    byTopic.get(topic)!.forEach((m, i) => byId.set(m, results[i]!));
  }
  return messages.map((m) => byId.get(m)!);
}

/** One topic's messages in one request; when it fails, every message of it fails. */
async function sendTopic(
  send: SendDeps,
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
    await send.slot.send({
      topic,
      acks: -1,
      timeout: send.timeout,
      messages: messages.map((m) => ({
        key: m.key,
        value: Buffer.from(m.payload.buffer, m.payload.byteOffset, m.payload.byteLength),
        headers: messageHeaders(m),
      })),
    });
    send.outage.delivered();
    return messages.map((m) => ({ messageId: m.messageId, ok: true }));
  } catch (cause) {
    // A broken producer was replaced (or cannot be): the batch goes again on the new one.
    const retriable = producerStateError(cause) !== undefined || isRetriable(cause);
    // An ack of a producer replaced after an outage is part of that outage.
    const unreachable = isBrokerOutage(cause) || isUntrustedAck(cause);
    if (unreachable) send.outage.unreachable(topic, cause);
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

/**
 * kafkajs errors of a connection, a request or a broker that is not there (yet); for
 * @platformatic/kafka, its `NetworkError` and `TimeoutError` (see `isUnreachable`).
 */
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
  // The same, under the name newer clients (@platformatic/kafka) use.
  'NOT_LEADER_OR_FOLLOWER',
]);

/** The broker error type: kafkajs's `type`, or @platformatic/kafka's `apiId`. */
function brokerErrorType(e: Readonly<Record<string, unknown>>): string | undefined {
  if (typeof e.type === 'string') return e.type;
  return typeof e.apiId === 'string' ? e.apiId : undefined;
}

/** True when the send failed because of the cluster or the network, not the message. */
function isBrokerOutage(error: unknown): boolean {
  if (error instanceof KafkaTimeoutError || isUnreachable(error)) return true;
  for (const e of errorChain(error)) {
    if (typeof e.name === 'string' && OUTAGE_NAMES.has(e.name)) return true;
    const type = brokerErrorType(e);
    if (type !== undefined && OUTAGE_TYPES.has(type)) return true;
  }
  return false;
}

/** False when a cause anywhere in the chain says retrying cannot help. */
function isRetriable(error: unknown): boolean {
  for (const e of errorChain(error)) {
    const type = brokerErrorType(e);
    if (type !== undefined && PERMANENT.has(type)) return false;
  }
  return true;
}
