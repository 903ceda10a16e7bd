// The client seam: the consumer and the publisher are written against these interfaces only;
// `kafkajs/` holds the client justonce builds from `brokers`. A second client goes beside it.

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
