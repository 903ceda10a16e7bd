import {
  ConfigurationError,
  optionKeys,
  rejectUnknownOptions,
  silentLogger,
  type Handler,
  type Inbox,
  type InboxOutcome,
  type Logger,
} from '@justonce/core';
import { createBatchProcessor, type RecordPosition } from './batch-processor';
import {
  kafkajsClient,
  resolveKafkaTimeouts,
  type KafkaClient,
  type KafkaConsumerClient,
  type KafkaConsumerConfig,
  type KafkaProducerClient,
  type KafkaTimeouts,
} from './client';
import { watchConsumerOutages } from './consumer-outage';
import {
  defaultDeadLetterTopic,
  forwardToDeadLetterTopic,
  type DeadLetterTopicName,
} from './dead-letter';
import { KafkaStateError } from './errors';
import { HEADERS } from './headers';
import type { MessageIdOptions } from './message-id';

/**
 * Group settings justonce sets unless `consumerConfig` overrides them. The three group limits
 * are kafkajs's own, set here so that they are justonce's documented limits whatever the
 * client's defaults; `maxWaitTimeInMs` is shorter than kafkajs's 5 000.
 */
const DEFAULT_GROUP = {
  /** The broker evicts a member it has not heard from for this long. */
  sessionTimeout: 30_000,
  /** How long the coordinator waits for members to rejoin during a rebalance. */
  rebalanceTimeout: 60_000,
  /** How often the member heartbeats (a failed heartbeat is how it notices a lost broker). */
  heartbeatInterval: 3_000,
  // A paused partition resumes (after a retry delay or a store outage) only when the fetch in
  // flight returns; kafkajs's 5 s long poll would hold every resume back that long.
  maxWaitTimeInMs: 1_000,
} as const;

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
  /** Partitions handled at the same time (each in order). Default 1. */
  readonly partitionsConsumedConcurrently?: number;
  /** How the message id is found: `message-id` header, then `extract`, then the offset. */
  readonly messageId?: MessageIdOptions;
  /** Header whose value becomes the envelope's scope (tenant). Default `tenant`. */
  readonly scopeHeader?: string;
  /** Dead-letter topic: a name, or a function of the source topic. Default `<topic>.dlq`. */
  readonly deadLetterTopic?: DeadLetterTopicName;
  /**
   * Producer for dead letters. Default: one created from the client (acks from all in-sync
   * replicas), connected on `start` and disconnected on `stop`.
   */
  readonly deadLetterProducer?: KafkaProducerClient;
  /**
   * Group settings passed to the client. Defaults: `sessionTimeout` 30 000,
   * `rebalanceTimeout` 60 000, `heartbeatInterval` 3 000 (kafkajs's), and `maxWaitTimeInMs`
   * 1 000 (kafkajs: 5 000), so a partition paused for a retry or a store outage resumes promptly.
   */
  readonly consumerConfig?: Omit<KafkaConsumerConfig, 'groupId'>;
  /** Called with every outcome and where its record sits; for metrics and tests. */
  readonly onOutcome?: (outcome: InboxOutcome<R>, position: RecordPosition) => void;
  /** Default: silent. */
  readonly logger?: Logger;
}

/** A running inbox consumer. */
export interface KafkaInboxConsumer {
  /** Connects, subscribes and starts consuming. Resolves once consumption has started. */
  start(): Promise<void>;
  /**
   * Stops consuming: the batch in flight finishes its current chunk (whose offsets are
   * committed), the member leaves the group, connections close. Idempotent.
   */
  stop(): Promise<void>;
}

/**
 * Wraps a Kafka consumer group around an inbox: every record is handled in a database
 * transaction that also records its message id, and its offset is committed only after
 * that transaction committed. Failed records are retried after the inbox's delay by
 * pausing the partition (heartbeats go on); records the inbox dead-letters are forwarded
 * to the dead-letter topic with reason headers, then committed. Order within a partition
 * is kept.
 */
export function createKafkaConsumer<R = unknown>(
  options: KafkaConsumerOptions<R>,
): KafkaInboxConsumer {
  const settings = validate(options);
  const logger = options.logger ?? silentLogger;
  const kafka =
    options.kafka ??
    kafkajsClient({
      brokers: options.brokers ?? [],
      clientId: options.clientId,
      timeouts: options.timeouts,
    });
  const consumerConfig = {
    ...DEFAULT_GROUP,
    ...options.consumerConfig,
    groupId: options.groupId,
  } satisfies KafkaConsumerConfig;
  // `??`: an explicit `undefined` in `consumerConfig` spreads over the default.
  const heartbeatInterval = consumerConfig.heartbeatInterval ?? DEFAULT_GROUP.heartbeatInterval;

  let consumer: KafkaConsumerClient | undefined;
  let producer: KafkaProducerClient | undefined;
  const ownsProducer = options.deadLetterProducer === undefined;
  let generation = 0;
  let state: 'new' | 'starting' | 'running' | 'stopped' = 'new';
  let stopping: Promise<void> | undefined;
  const unsubscribe: Array<() => void> = [];
  let inFlight: Promise<void> = Promise.resolve();

  const processor = createBatchProcessor<R>({
    inbox: options.inbox,
    handler: options.handler,
    mode: settings.mode,
    batchSize: settings.batchSize,
    envelope: {
      messageId: {
        header: options.messageId?.header ?? HEADERS.messageId,
        fallbackToOffset: options.messageId?.fallbackToOffset ?? true,
        extract: options.messageId?.extract,
      },
      scopeHeader: options.scopeHeader ?? HEADERS.tenant,
      onExtractError: (error, topic, partition, offset) =>
        logger.warn('kafka message id extractor threw; the record has no id', {
          topic,
          partition,
          offset,
          error: error instanceof Error ? error.message : String(error),
        }),
    },
    consumer: {
      seek: (position) => consumer?.seek(position),
    },
    heartbeatEveryMs: Math.max(100, Math.floor(heartbeatInterval / 2)),
    generation: () => generation,
    forwardDeadLetter: (record, topic, partition, why) => {
      if (!producer) throw new KafkaStateError('the dead-letter producer is not connected');
      return forwardToDeadLetterTopic(
        producer,
        options.deadLetterTopic ?? defaultDeadLetterTopic,
        record,
        topic,
        partition,
        why,
      );
    },
    onOutcome: options.onOutcome,
    logger,
  });

  /** Throws when `stop()` was called while `start()` was under way. */
  function stillStarting(): void {
    if (state !== 'starting') {
      throw new KafkaStateError('the consumer was stopped while it was starting', {
        groupId: options.groupId,
      });
    }
  }

  async function start(): Promise<void> {
    if (state !== 'new') {
      throw new KafkaStateError(`the consumer cannot start: it is ${state}`, {
        groupId: options.groupId,
      });
    }
    state = 'starting';
    try {
      producer = options.deadLetterProducer ?? kafka.producer({ retry: { retries: 5 } });
      if (ownsProducer) await track(producer.connect());
      stillStarting();
      consumer = kafka.consumer(consumerConfig);
      unsubscribe.push(
        consumer.on(consumer.events.GROUP_JOIN ?? 'consumer.group_join', () => {
          generation += 1;
          // Partitions may have moved: forget retry positions and what decides first
          // deliveries, so each partition's first chunk after the join is counted again.
          processor.reset();
        }),
      );
      unsubscribe.push(...watchConsumerOutages(consumer, { groupId: options.groupId, logger }));
      await track(consumer.connect());
      stillStarting();
      await consumer.subscribe({
        topics: [...options.topics],
        fromBeginning: settings.fromBeginning,
      });
      stillStarting();
      await consumer.run({
        autoCommit: false,
        eachBatchAutoResolve: false,
        partitionsConsumedConcurrently: settings.partitionsConsumedConcurrently,
        eachBatch: (context) => processor.eachBatch(context),
      });
      stillStarting();
      state = 'running';
      logger.info('kafka inbox consumer started', {
        groupId: options.groupId,
        mode: settings.mode,
      });
    } catch (error) {
      await stop();
      // `stop()` may have run while this start was connecting: release what it missed.
      await release();
      throw error;
    }
  }

  /** Remembers a connect in progress, so that `release` can wait for it to settle. */
  function track(connecting: Promise<void>): Promise<void> {
    inFlight = connecting.catch(() => undefined);
    return connecting;
  }

  /** Disconnects whatever is connected; safe to call more than once. */
  async function release(): Promise<unknown[]> {
    const errors: unknown[] = [];
    // A disconnect while a connect is under way would leave the connection open behind it.
    await inFlight;
    const c = consumer;
    consumer = undefined;
    // The consumer first: its disconnect waits for the batch in flight, which may still
    // need the dead-letter producer.
    if (c) await c.disconnect().catch((error: unknown) => errors.push(error));
    const p = producer;
    producer = undefined;
    if (p && ownsProducer) await p.disconnect().catch((error: unknown) => errors.push(error));
    return errors;
  }

  function stop(): Promise<void> {
    stopping ??= (async () => {
      state = 'stopped';
      processor.dispose();
      for (const off of unsubscribe.splice(0)) off();
      const errors = await release();
      if (errors.length > 0) {
        logger.warn('kafka inbox consumer stopped with errors', { errors: errors.map(describe) });
      }
    })();
    return stopping;
  }

  return { start, stop };
}

function describe(value: unknown): string {
  if (value instanceof Error) return value.message;
  try {
    return JSON.stringify(value);
  } catch {
    return String(value);
  }
}

interface Settings {
  mode: 'batch' | 'message';
  batchSize: number;
  fromBeginning: boolean;
  partitionsConsumedConcurrently: number;
}

const CONSUMER_KEYS = optionKeys<KafkaConsumerOptions>()([
  'inbox',
  'handler',
  'groupId',
  'topics',
  'kafka',
  'brokers',
  'clientId',
  'timeouts',
  'mode',
  'batchSize',
  'fromBeginning',
  'partitionsConsumedConcurrently',
  'messageId',
  'scopeHeader',
  'deadLetterTopic',
  'deadLetterProducer',
  'consumerConfig',
  'onOutcome',
  'logger',
]);
const MESSAGE_ID_KEYS = optionKeys<MessageIdOptions>()(['header', 'extract', 'fallbackToOffset']);
/** `groupId` is left out: the consumer sets it from its own option. */
const CONSUMER_CONFIG_KEYS = optionKeys<Omit<KafkaConsumerConfig, 'groupId'>>()([
  'sessionTimeout',
  'rebalanceTimeout',
  'heartbeatInterval',
  'maxWaitTimeInMs',
  'maxBytesPerPartition',
  'maxBytes',
  'allowAutoTopicCreation',
  'retry',
]);
const CLIENT_RETRY_KEYS = optionKeys<NonNullable<KafkaConsumerConfig['retry']>>()([
  'retries',
  'initialRetryTime',
  'maxRetryTime',
]);

/** Refuses keys the options (or their nested objects) do not declare, e.g. a misspelling. */
function rejectUnknownKeys<R>(options: KafkaConsumerOptions<R>): void {
  const context = 'createKafkaConsumer';
  rejectUnknownOptions(options, CONSUMER_KEYS, context);
  rejectUnknownOptions(options.messageId, MESSAGE_ID_KEYS, context, 'messageId');
  rejectUnknownOptions(options.consumerConfig, CONSUMER_CONFIG_KEYS, context, 'consumerConfig');
  const retry: unknown = options.consumerConfig?.retry;
  rejectUnknownOptions(retry, CLIENT_RETRY_KEYS, context, 'consumerConfig.retry');
}

function validate<R>(options: KafkaConsumerOptions<R>): Settings {
  const fail = (message: string, details: Record<string, unknown> = {}): never => {
    throw new ConfigurationError(`createKafkaConsumer: ${message}`, details);
  };
  if (typeof options !== 'object' || options === null) fail('options are required');
  rejectUnknownKeys(options);
  if (!options.inbox || typeof options.inbox.processBatch !== 'function') fail('inbox is required');
  if (typeof options.handler !== 'function') fail('handler must be a function');
  if (typeof options.groupId !== 'string' || options.groupId === '')
    fail('groupId must be a non-empty string');
  if (!Array.isArray(options.topics) || options.topics.length === 0)
    fail('topics must list at least one topic');
  for (const topic of options.topics) {
    if (!(topic instanceof RegExp) && !isTopicName(topic)) fail('invalid topic name', { topic });
  }
  if (options.kafka === undefined) {
    if (!Array.isArray(options.brokers) || options.brokers.length === 0) {
      fail('give either kafka (a client) or brokers');
    }
  } else if (options.brokers !== undefined) {
    fail('give only one of kafka and brokers');
  } else if (options.timeouts !== undefined) {
    fail('timeouts apply to the client built from brokers; configure the kafka client you pass');
  }
  resolveKafkaTimeouts(options.timeouts, 'createKafkaConsumer');
  const mode = options.mode ?? 'batch';
  if (mode !== 'batch' && mode !== 'message') fail("mode must be 'batch' or 'message'", { mode });
  const batchSize = options.batchSize ?? 100;
  if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > 10_000) {
    fail('batchSize must be an integer from 1 to 10000', { batchSize });
  }
  const concurrency = options.partitionsConsumedConcurrently ?? 1;
  if (!Number.isInteger(concurrency) || concurrency < 1) {
    fail('partitionsConsumedConcurrently must be a positive integer', { concurrency });
  }
  if (options.messageId?.header !== undefined && options.messageId.header === '') {
    fail('messageId.header must not be empty');
  }
  if (options.messageId?.extract !== undefined && typeof options.messageId.extract !== 'function') {
    fail('messageId.extract must be a function');
  }
  if (typeof options.deadLetterTopic === 'string' && !isTopicName(options.deadLetterTopic)) {
    fail('invalid deadLetterTopic', { deadLetterTopic: options.deadLetterTopic });
  }
  const config = options.consumerConfig ?? {};
  for (const key of [
    'sessionTimeout',
    'rebalanceTimeout',
    'heartbeatInterval',
    'maxWaitTimeInMs',
  ] as const) {
    const value = config[key];
    if (value !== undefined && (!Number.isInteger(value) || value <= 0)) {
      fail(`consumerConfig.${key} must be a positive integer`, { [key]: value });
    }
  }
  const session = config.sessionTimeout ?? DEFAULT_GROUP.sessionTimeout;
  const heartbeat = config.heartbeatInterval ?? DEFAULT_GROUP.heartbeatInterval;
  if (heartbeat >= session) {
    fail('consumerConfig.heartbeatInterval must be below sessionTimeout', { heartbeat, session });
  }
  return {
    mode,
    batchSize,
    fromBeginning: options.fromBeginning ?? false,
    partitionsConsumedConcurrently: concurrency,
  };
}

/** Kafka's rule for topic names: 1–249 of `[a-zA-Z0-9._-]`, not `.` or `..`. */
export function isTopicName(name: unknown): name is string {
  return (
    typeof name === 'string' &&
    /^[a-zA-Z0-9._-]{1,249}$/.test(name) &&
    name !== '.' &&
    name !== '..'
  );
}
