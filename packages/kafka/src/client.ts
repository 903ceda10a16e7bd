import { ConfigurationError, type Logger } from '@justonce/core';
import { optionKeys, rejectUnknownOptions, resolveLogger } from '@justonce/core/transport';
import { Kafka, logLevel, type logCreator, type ProducerConfig } from 'kafkajs';
import { createConnectionRegistry } from './dead-connections';
import type { RawHeaders } from './headers';

/**
 * The narrow Kafka client justonce needs. A kafkajs `Kafka` instance satisfies it as is;
 * any KafkaJS-compatible client (one whose consumer offers `eachBatch` with the same
 * capabilities and whose producer offers `send`) can be passed instead.
 */
export interface KafkaClient {
  /** Creates a consumer of the given group. */
  consumer(config: KafkaConsumerConfig): KafkaConsumerClient;
  /** Creates a producer. */
  producer(config?: KafkaProducerConfig): KafkaProducerClient;
}

/** Consumer settings justonce passes through to the client (kafkajs names and meanings). */
export interface KafkaConsumerConfig {
  /** Consumer group id. */
  groupId: string;
  /** Milliseconds without a heartbeat before the broker evicts the member. */
  sessionTimeout?: number;
  /** Milliseconds the coordinator waits for members to rejoin during a rebalance. */
  rebalanceTimeout?: number;
  /** Milliseconds between heartbeats. */
  heartbeatInterval?: number;
  /** Longest time a fetch waits on the broker for data. */
  maxWaitTimeInMs?: number;
  /** Most bytes fetched per partition per request. */
  maxBytesPerPartition?: number;
  /** Most bytes fetched per request. */
  maxBytes?: number;
  /** Whether topics that do not exist are created on subscribe. */
  allowAutoTopicCreation?: boolean;
  /** Client-side retry settings. */
  retry?: { retries?: number; initialRetryTime?: number; maxRetryTime?: number };
}

/** Producer settings justonce passes through to the client (kafkajs names and meanings). */
export interface KafkaProducerConfig {
  /** Enables the idempotent producer (sequence numbers per partition, no duplicates on retry). */
  idempotent?: boolean;
  /** Requests in flight per broker connection. */
  maxInFlightRequests?: number;
  /** Whether topics that do not exist are created on first send. */
  allowAutoTopicCreation?: boolean;
  /** Client-side retry settings. */
  retry?: { retries?: number; initialRetryTime?: number; maxRetryTime?: number };
}

/** One record as the consumer delivers it. */
export interface KafkaRecord {
  /** The record key, `null` when it has none. */
  readonly key: Buffer | null;
  /** The record value, `null` for a tombstone. */
  readonly value: Buffer | null;
  /** Decimal string. */
  readonly offset: string;
  /** Milliseconds since the epoch, as a decimal string. */
  readonly timestamp: string;
  /** Record headers as delivered. */
  readonly headers?: RawHeaders;
}

/** The batch of one topic-partition handed to `eachBatch`. */
export interface KafkaBatch {
  /** The topic. */
  readonly topic: string;
  /** The partition. */
  readonly partition: number;
  /** Offset after the last record in the partition, as a decimal string. */
  readonly highWatermark: string;
  /** The records, in offset order. */
  readonly messages: readonly KafkaRecord[];
}

/** Offsets to commit, in the client's shape. */
export interface KafkaOffsetsByTopicPartition {
  /** Per topic, per partition, the next offset to read. */
  topics: Array<{ topic: string; partitions: Array<{ partition: number; offset: string }> }>;
}

/** What `eachBatch` receives: the batch plus the capabilities to steer it. */
export interface KafkaBatchContext {
  /** The records of one topic-partition. */
  readonly batch: KafkaBatch;
  /** Marks an offset as processed locally (nothing is sent to the broker). */
  resolveOffset(offset: string): void;
  /** Sends a heartbeat if one is due; rejects when the group is rebalancing. */
  heartbeat(): Promise<void>;
  /** Pauses this topic-partition; the returned function resumes it. */
  pause(): () => void;
  /** Commits the given offsets now (offset = next offset to read). */
  commitOffsetsIfNecessary(offsets?: KafkaOffsetsByTopicPartition): Promise<void>;
  /** False once the consumer is stopping. */
  isRunning(): boolean;
  /** True once this partition was sought elsewhere: the batch must not go on. */
  isStale(): boolean;
}

/** Settings of `run` that justonce uses. */
export interface KafkaRunConfig {
  /** Always false: offsets are committed explicitly after the database commit. */
  autoCommit: boolean;
  /** Always false: only finished records are resolved. */
  eachBatchAutoResolve: boolean;
  /** Partitions handled at once. */
  partitionsConsumedConcurrently?: number;
  /** Called with each fetched batch of one topic-partition. */
  eachBatch: (context: KafkaBatchContext) => Promise<void>;
}

/** A topic-partition selection for `pause` and `resume`. */
export interface KafkaTopicPartitions {
  /** The topic. */
  topic: string;
  /** Its partitions; all of them when omitted. */
  partitions?: number[];
}

/** The consumer part of {@link KafkaClient}. */
export interface KafkaConsumerClient {
  /** Connects to the cluster. */
  connect(): Promise<void>;
  /** Stops consuming, leaves the group and closes connections. */
  disconnect(): Promise<void>;
  /** Subscribes to topics; `fromBeginning` applies to a group without committed offsets. */
  subscribe(subscription: {
    topics: Array<string | RegExp>;
    fromBeginning?: boolean;
  }): Promise<void>;
  /** Joins the group and starts fetching; resolves once consumption has started. */
  run(config: KafkaRunConfig): Promise<void>;
  /** Stops fetching and waits for the batch in flight. */
  stop(): Promise<void>;
  /** Moves the next fetch position of a partition; no commit when auto-commit is off. */
  seek(position: { topic: string; partition: number; offset: string }): void;
  /** Stops fetching the given partitions. */
  pause(topics: KafkaTopicPartitions[]): void;
  /** Fetches the given partitions again. */
  resume(topics: KafkaTopicPartitions[]): void;
  /** Subscribes to an instrumentation event; returns a function that unsubscribes. */
  on(eventName: string, listener: (event: KafkaInstrumentationEvent) => void): () => void;
  /** Names of the instrumentation events (`GROUP_JOIN`, `CRASH`, …). */
  readonly events: Readonly<Record<string, string>>;
}

/** An instrumentation event; for `GROUP_JOIN` the payload carries `memberAssignment`. */
export interface KafkaInstrumentationEvent {
  /** The event name. */
  readonly type: string;
  /** The event's data. */
  readonly payload: unknown;
}

/** One record to produce. */
export interface KafkaProducerRecord {
  /** The key (chooses the partition). */
  key?: Buffer | string | null;
  /** The value. */
  value: Buffer | string | null;
  /** Headers. */
  headers?: Record<string, Buffer | string>;
}

/** The producer part of {@link KafkaClient}. */
export interface KafkaProducerClient {
  /** Connects to the cluster. */
  connect(): Promise<void>;
  /** Closes connections. */
  disconnect(): Promise<void>;
  /** Sends records to one topic; resolves once the broker acknowledged them with `acks`. */
  send(record: {
    topic: string;
    messages: KafkaProducerRecord[];
    acks?: number;
    timeout?: number;
  }): Promise<unknown>;
}

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
