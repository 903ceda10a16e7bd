import type { KnexTransaction, Handler, Inbox, InboxDedupMode, Logger } from '@justonce/core';
import type {
  Consumer,
  DeadLetterFacts,
  Envelope,
  MessageIdOptions,
  MessagingSystem,
  ResilienceOptions,
  ResolvedMessageId,
  SettledEvent,
} from '@justonce/core/transport';
import type {
  KafkaBatchContext,
  KafkaClient,
  KafkaConsumerClient,
  KafkaConsumerConfig,
  KafkaProducerClient,
  KafkaRecord,
} from '../client/types';
import type { KafkaTimeouts } from '../client/kafkajs/client';
import type { KafkaClientName } from '../client/built-client';
import type { FirstDeliveryTracker } from './batch/first-delivery';
import type { Narrowing } from './batch/narrowing';

// The types the consumer's modules share, kept apart from the code: each module imports
// them from here rather than from the module that builds on the others, so no import runs
// in a circle. This module imports only leaves (client, first-delivery, narrowing).

/**
 * One consumed record with where it sits: what `messageId.extract` receives and what every
 * {@link SettledEvent} of the Kafka consumer carries as `message`. The offset is
 * `record.offset`.
 */
export interface KafkaDelivery {
  /** The topic the record was consumed from. */
  readonly topic: string;
  /** Its partition. */
  readonly partition: number;
  /** The record as the client delivered it (key, value, offset, timestamp, raw headers). */
  readonly record: KafkaRecord;
}

/** Names the dead-letter topic of a source topic. */
export type DeadLetterTopicName = string | ((sourceTopic: string) => string);

/** Where dead letters go: `deadLetter` of {@link KafkaConsumerOptions}. */
export interface KafkaDeadLetterOptions {
  /** Dead-letter topic: a name, or a function of the source topic. Default `<topic>.dlq`. */
  readonly topic?: DeadLetterTopicName;
  /**
   * Producer for dead letters. Default: one created from the client (acks from all in-sync
   * replicas, 5 retries), connected on `start` and disconnected on `stop`.
   */
  readonly producer?: KafkaProducerClient;
}

/** Options of {@link createKafkaConsumer}. */
export interface KafkaConsumerOptions<R = unknown, Tx = KnexTransaction> {
  /** The inbox every record goes through; its `consumer` name is the dedup namespace. */
  readonly inbox: Inbox<Tx>;
  /** The handler; its effects commit if and only if the record's dedup row commits. */
  readonly handler: Handler<R, Tx>;
  /** Consumer group id. Required. */
  readonly groupId: string;
  /** Topics (names or patterns) to consume. Required, at least one. */
  readonly topics: ReadonlyArray<string | RegExp>;
  /** The Kafka client. Default: kafkajs built from `brokers` and `clientId`. */
  readonly kafka?: KafkaClient;
  /** Bootstrap brokers, used when `kafka` is not given. */
  readonly brokers?: readonly string[];
  /**
   * The client built from `brokers`: `kafkajs` (default) or `platformatic`
   * (@platformatic/kafka; topic names only, no patterns). Refused with `kafka`. See
   * the package README, "Choosing the client".
   */
  readonly client?: KafkaClientName;
  /** Client id, used when `kafka` is not given. Default `justonce`. */
  readonly clientId?: string;
  /**
   * Connection and request time limits of the client built from `brokers` (see
   * {@link KafkaTimeouts}); refused with `kafka`, whose own settings apply.
   */
  readonly timeouts?: KafkaTimeouts;
  /**
   * `batch` (default): each chunk of up to `batchSize` records is one database transaction
   * with one multi-row dedup insert. `message`: each record is its own transaction.
   */
  readonly mode?: 'batch' | 'message';
  /**
   * Records per chunk: per transaction in `batch` mode, per offset commit in both modes.
   * Default 100.
   */
  readonly batchSize?: number;
  /** Where a group with no committed offset starts: the earliest record when true. Default false. */
  readonly fromBeginning?: boolean;
  /**
   * The dedup mode the inbox must have been created with (its `dedup` option): `'ids'` (a
   * record per message id), `'watermark'` (per partition, the highest offset handled; no row
   * per message; for topics whose producer never writes one message twice, such as
   * justonce's relay) or `'watermark+ids'`. Construction fails when the inbox says another
   * mode. Default: whatever the inbox has. Every record carries its topic, partition and
   * offset, which the watermark modes need; the inbox reads a partition's watermark for
   * every chunk, so a partition that comes back after a rebalance starts from what its
   * last owner committed.
   */
  readonly dedup?: InboxDedupMode;
  /**
   * Partitions handled at the same time, each in order (kafkajs's
   * `partitionsConsumedConcurrently`). Default 1.
   */
  readonly concurrency?: number;
  /**
   * How the message id is found: the `message-id` header, then `extract` (given the record
   * with its topic and partition), then, unless `fallback` is false,
   * `<topic>/<partition>/<offset>`.
   */
  readonly messageId?: MessageIdOptions<KafkaDelivery>;
  /** Header whose value becomes the envelope's scope (tenant). Default `tenant`. */
  readonly scopeHeader?: string;
  /** Dead-letter topic and producer. Default: `<topic>.dlq`, a producer built from the client. */
  readonly deadLetter?: KafkaDeadLetterOptions;
  /**
   * Group settings passed to the client. Defaults: `sessionTimeout` 30 000,
   * `rebalanceTimeout` 60 000, `heartbeatInterval` 3 000 (kafkajs's), and `maxWaitTimeInMs`
   * 1 000 (kafkajs: 5 000), so a partition paused for a retry or a store outage resumes promptly.
   */
  readonly consumerConfig?: Omit<KafkaConsumerConfig, 'groupId'>;
  /**
   * Called once for every record the consumer settles (see core's `SettleAction`): `acked`
   * once its offset is committed, `redelivered`, `dead-lettered`, `held`, `released`,
   * `abandoned`. For metrics and tests; a throw is logged and ignored.
   */
  readonly onSettled?: (event: SettledEvent<R, KafkaDelivery>) => void;
  /**
   * Retry budget and circuit breakers (docs/load-shedding.md): while the breaker is open the
   * records are held and their partitions paused; a retry the budget does not pay for waits
   * `budget.spentDelayMs`. Default: none.
   */
  readonly resilience?: ResilienceOptions<Envelope>;
  /** Default: silent. */
  readonly logger?: Logger;
}

/** A Kafka consumer group wrapped around an inbox, with the one lifecycle of every consumer. */
export interface KafkaConsumer extends Consumer {
  /** The consumer group this consumer joins. */
  readonly groupId: string;
}

/** Settings that shape how a record becomes an {@link Envelope}. */
export interface EnvelopeSettings {
  /** Core's message-id rules; the broker's identity is `<topic>/<partition>/<offset>`. */
  readonly messageId: ResolvedMessageId<KafkaDelivery>;
  readonly scopeHeader: string;
  readonly onExtractError: (
    error: unknown,
    topic: string,
    partition: number,
    offset: string,
  ) => void;
}

/** What the batch processor needs from the consumer around it. @internal */
export interface ProcessorDeps<R> {
  readonly inbox: Inbox;
  readonly handler: Handler<R>;
  readonly mode: 'batch' | 'message';
  readonly batchSize: number;
  readonly envelope: EnvelopeSettings;
  readonly consumer: Pick<KafkaConsumerClient, 'seek'>;
  readonly heartbeatEveryMs: number;
  /** Counts group joins; a change means partitions may have been revoked. */
  readonly generation: () => number;
  /** Sends the record to its dead-letter topic; resolves to that topic's name. */
  readonly forwardDeadLetter: (delivery: KafkaDelivery, facts: DeadLetterFacts) => Promise<string>;
  readonly onSettled?: (event: SettledEvent<R, KafkaDelivery>) => void;
  readonly logger: Logger;
  /** The broker, for the inbox's `process` spans: `kafka` and the consumer group. */
  readonly messaging?: MessagingSystem;
}

/**
 * The state of one batch processor, per topic-partition (keyed `topic\0partition`), shared
 * by the functions in `batch/run.ts`, `batch/partition-pacing.ts`, `batch/chunk.ts`,
 * `handle.ts` and `settle.ts`. @internal
 */
export interface ProcessorRuntime<R> {
  readonly deps: ProcessorDeps<R>;
  /** The offset a failed record must be retried from. */
  readonly retryFrom: Map<string, bigint>;
  /** Consecutive infrastructure failures (store outage, dead-letter topic), for the backoff. */
  readonly holds: Map<string, number>;
  /** Pending resumes of paused partitions. */
  readonly timers: Set<ReturnType<typeof setTimeout>>;
  /** What decides which records are declared first deliveries. */
  readonly firstDeliveries: FirstDeliveryTracker;
  /** A stretch taken in smaller chunks after a chunk failed as a whole. */
  readonly narrowed: Map<string, Narrowing>;
  /** The abort controllers of the batches under way, aborted by `halt`. */
  readonly running: Set<AbortController>;
  /** Set by `halt`: why no batch may go on or commit anything. */
  halted: Error | undefined;
  /** Told the reason of the halt; each chunk under way registers one while it runs. */
  readonly haltListeners: Set<(reason: Error) => void>;
}

/** The `eachBatch` handler of the consumer and what its lifecycle needs from it. @internal */
export interface BatchProcessor {
  eachBatch(context: KafkaBatchContext): Promise<void>;
  /** Forgets retry positions and partition state; called after the group was joined again. */
  reset(): void;
  /** Cancels pending resumes and forgets partition state; called when the consumer stopped. */
  dispose(): void;
  /**
   * Stops every batch at its next step, aborting handlers' signals; nothing more is
   * committed, so the records in flight are delivered again. For `stop({ drain: false })`.
   */
  halt(reason: string): void;
}
