import {
  consumerLifecycle,
  type Consumer,
  type Handler,
  type Inbox,
  type Logger,
  type MessageIdOptions,
  type SettledEvent,
} from '@justonce/core';
import type {
  KafkaClient,
  KafkaConsumerConfig,
  KafkaProducerClient,
  KafkaRecord,
  KafkaTimeouts,
} from './client';
import { resolveConsumerOptions } from './consumer-options';
import { createConsumerRuntime } from './consumer-runtime';
import { startConsumer } from './start-consumer';
import { stopConsumer } from './stop-consumer';
import type { DeadLetterTopicName } from './dead-letter';

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
export interface KafkaConsumerOptions<R = unknown> {
  /** The inbox every record goes through; its `consumer` name is the dedup namespace. */
  readonly inbox: Inbox;
  /** The handler; its effects commit if and only if the record's dedup row commits. */
  readonly handler: Handler<R>;
  /** Consumer group id. Required. */
  readonly groupId: string;
  /** Topics (names or patterns) to consume. Required, at least one. */
  readonly topics: ReadonlyArray<string | RegExp>;
  /** The Kafka client. Default: kafkajs built from `brokers` and `clientId`. */
  readonly kafka?: KafkaClient;
  /** Bootstrap brokers, used when `kafka` is not given. */
  readonly brokers?: readonly string[];
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
  /** Default: silent. */
  readonly logger?: Logger;
}

/** A Kafka consumer group wrapped around an inbox, with the one lifecycle of every consumer. */
export interface KafkaConsumer extends Consumer {
  /** The consumer group this consumer joins. */
  readonly groupId: string;
}

/**
 * Wraps a Kafka consumer group around an inbox: every record is handled in a database
 * transaction that also records its message id, and its offset is committed only after
 * that transaction committed. Failed records are retried after the inbox's delay by
 * pausing the partition (heartbeats go on); records the inbox dead-letters are forwarded
 * to the dead-letter topic with the original headers plus core's `DEAD_LETTER_HEADERS`,
 * then committed. Order within a partition is kept.
 *
 * `stop()` (drain, the default) lets the chunk in flight finish and commits it;
 * `stop({ drain: false })` aborts the handlers and commits nothing more: the records in
 * flight are delivered again (the inbox answers `duplicate` for those that committed).
 */
export function createKafkaConsumer<R = unknown>(options: KafkaConsumerOptions<R>): KafkaConsumer {
  const resolved = resolveConsumerOptions(options);
  const runtime = createConsumerRuntime(resolved);
  const lifecycle = consumerLifecycle(`kafka consumer of group ${resolved.groupId}`, {
    start: () => startConsumer(runtime),
    stop: (stopOptions) => stopConsumer(runtime, stopOptions),
  });
  return {
    groupId: resolved.groupId,
    start: () => lifecycle.start(),
    stop: (stopOptions) => {
      // Tells a start under way to give up at its next step, instead of joining the group
      // only for the stop that waits on it to leave again.
      runtime.stopRequested = true;
      return lifecycle.stop(stopOptions);
    },
    get running() {
      return lifecycle.running;
    },
  };
}
