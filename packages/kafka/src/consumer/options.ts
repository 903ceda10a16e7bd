import { ConfigurationError, type Handler, type Inbox, type Logger } from '@justonce/core';
import {
  optionKeys,
  rejectUnknownOptions,
  resolveLogger,
  resolveMessageIdOptions,
  withResilience,
  type MessageIdOptions,
  type ResolvedMessageId,
  type SettledEvent,
} from '@justonce/core/transport';
import type { KafkaClient, KafkaConsumerConfig, KafkaProducerClient } from '../client/types';
import { resolveKafkaTimeouts, validateBrokers } from '../client/kafkajs/client';
import { buildKafkaClient, validateClientName } from '../client/built-client';
import type {
  DeadLetterTopicName,
  KafkaConsumerOptions,
  KafkaDeadLetterOptions,
  KafkaDelivery,
} from './types';
import { defaultDeadLetterTopic } from './dead-letter';
import { HEADERS } from '../client/headers';

/**
 * Group settings justonce sets unless `consumerConfig` overrides them. The three group limits
 * are kafkajs's own, set here so that they are justonce's documented limits whatever the
 * client's defaults; `maxWaitTimeInMs` is shorter than kafkajs's 5 000.
 */
export const DEFAULT_GROUP = {
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

/** {@link KafkaConsumerOptions} validated, with every default applied. @internal */
export interface ResolvedConsumerOptions<R> {
  readonly inbox: Inbox;
  readonly handler: Handler<R>;
  readonly groupId: string;
  readonly topics: ReadonlyArray<string | RegExp>;
  readonly kafka: KafkaClient;
  readonly mode: 'batch' | 'message';
  readonly batchSize: number;
  readonly fromBeginning: boolean;
  readonly concurrency: number;
  readonly messageId: ResolvedMessageId<KafkaDelivery>;
  readonly scopeHeader: string;
  readonly deadLetterTopic: DeadLetterTopicName;
  /** The caller's producer; `undefined` when the consumer creates (and owns) its own. */
  readonly deadLetterProducer: KafkaProducerClient | undefined;
  readonly consumerConfig: KafkaConsumerConfig;
  /** Half the heartbeat interval (at least 100 ms): how often long batches heartbeat. */
  readonly heartbeatEveryMs: number;
  readonly onSettled: ((event: SettledEvent<R, KafkaDelivery>) => void) | undefined;
  readonly logger: Logger;
}

const CONTEXT = 'createKafkaConsumer';

/** Validates the options (throwing `ConfigurationError`) and applies the defaults. @internal */
export function resolveConsumerOptions<R>(
  options: KafkaConsumerOptions<R>,
): ResolvedConsumerOptions<R> {
  validate(options);
  // Before the client is built, which logs to it.
  const logger = resolveLogger(options.logger);
  const consumerConfig = {
    ...DEFAULT_GROUP,
    ...options.consumerConfig,
    groupId: options.groupId,
  } satisfies KafkaConsumerConfig;
  // `??`: an explicit `undefined` in `consumerConfig` spreads over the default.
  const heartbeatInterval = consumerConfig.heartbeatInterval ?? DEFAULT_GROUP.heartbeatInterval;
  return {
    inbox:
      options.resilience === undefined
        ? options.inbox
        : withResilience(options.inbox, options.resilience, CONTEXT),
    handler: options.handler,
    groupId: options.groupId,
    topics: [...options.topics],
    kafka:
      options.kafka ??
      buildKafkaClient(options.client, {
        brokers: options.brokers ?? [],
        clientId: options.clientId,
        timeouts: options.timeouts,
        logger: options.logger,
      }),
    mode: options.mode ?? 'batch',
    batchSize: options.batchSize ?? 100,
    fromBeginning: options.fromBeginning ?? false,
    concurrency: options.concurrency ?? 1,
    messageId: resolveMessageIdOptions(options.messageId),
    scopeHeader: options.scopeHeader ?? HEADERS.tenant,
    deadLetterTopic: options.deadLetter?.topic ?? defaultDeadLetterTopic,
    deadLetterProducer: options.deadLetter?.producer,
    consumerConfig,
    heartbeatEveryMs: Math.max(100, Math.floor(heartbeatInterval / 2)),
    onSettled: options.onSettled,
    logger,
  };
}

const CONSUMER_KEYS = optionKeys<KafkaConsumerOptions>()([
  'inbox',
  'handler',
  'groupId',
  'topics',
  'kafka',
  'brokers',
  'client',
  'clientId',
  'timeouts',
  'mode',
  'batchSize',
  'fromBeginning',
  'dedup',
  'concurrency',
  'messageId',
  'scopeHeader',
  'deadLetter',
  'consumerConfig',
  'onSettled',
  'resilience',
  'logger',
]);
const MESSAGE_ID_KEYS = optionKeys<MessageIdOptions>()(['header', 'extract', 'fallback']);
const DEAD_LETTER_KEYS = optionKeys<KafkaDeadLetterOptions>()(['topic', 'producer']);
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
  rejectUnknownOptions(options, CONSUMER_KEYS, CONTEXT);
  rejectUnknownOptions(options.messageId, MESSAGE_ID_KEYS, CONTEXT, 'messageId');
  rejectUnknownOptions(options.deadLetter, DEAD_LETTER_KEYS, CONTEXT, 'deadLetter');
  rejectUnknownOptions(options.consumerConfig, CONSUMER_CONFIG_KEYS, CONTEXT, 'consumerConfig');
  const retry: unknown = options.consumerConfig?.retry;
  rejectUnknownOptions(retry, CLIENT_RETRY_KEYS, CONTEXT, 'consumerConfig.retry');
}

function fail(message: string, details: Record<string, unknown> = {}): never {
  throw new ConfigurationError(`${CONTEXT}: ${message}`, details);
}

function validate<R>(options: KafkaConsumerOptions<R>): void {
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
  validateClient(options);
  validateProcessing(options);
  validateDedup(options);
  validateDeadLetter(options.deadLetter);
  validateGroup(options.consumerConfig ?? {});
}

function validateClient<R>(options: KafkaConsumerOptions<R>): void {
  if (options.kafka === undefined) {
    if (!Array.isArray(options.brokers) || options.brokers.length === 0) {
      fail('give either kafka (a client) or brokers');
    }
    validateBrokers(options.brokers, CONTEXT);
  } else if (options.brokers !== undefined) {
    fail('give only one of kafka and brokers');
  } else if (options.timeouts !== undefined) {
    fail('timeouts apply to the client built from brokers; configure the kafka client you pass');
  }
  resolveKafkaTimeouts(options.timeouts, CONTEXT);
  validateClientName(options.client, options.kafka === undefined ? undefined : 'kafka', CONTEXT);
  if (options.client === 'platformatic' && options.topics.some((t) => t instanceof RegExp)) {
    fail('topic patterns (RegExp) need the kafkajs client; @platformatic/kafka takes names only');
  }
  // Refused rather than documented: in the rebalance tests, records were left unhandled.
  const dedup = options.dedup ?? options.inbox.settings?.dedup ?? 'ids';
  if (options.client === 'platformatic' && dedup !== 'ids') {
    fail(
      `dedup '${dedup}' needs the kafkajs client for now: on @platformatic/kafka, records were ` +
        'left unhandled across rebalances in the watermark modes',
      { dedup },
    );
  }
}

const DEDUP_MODES = ['ids', 'watermark', 'watermark+ids'] as const;

/** `dedup` is a mode, and the inbox's own when the inbox says which (`settings.dedup`). */
function validateDedup<R>(options: KafkaConsumerOptions<R>): void {
  const { dedup } = options;
  if (dedup === undefined) return;
  if (!(DEDUP_MODES as readonly string[]).includes(dedup)) {
    fail(`dedup must be one of ${DEDUP_MODES.join(', ')}`, { dedup });
  }
  const settings = options.inbox.settings;
  if (settings === undefined) return;
  const inboxMode = settings.dedup ?? 'ids';
  if (inboxMode !== dedup) {
    fail(`dedup is '${dedup}' but the inbox was created with dedup '${inboxMode}'`, {
      dedup,
      inboxDedup: inboxMode,
    });
  }
}

function validateProcessing<R>(options: KafkaConsumerOptions<R>): void {
  const mode = options.mode ?? 'batch';
  if (mode !== 'batch' && mode !== 'message') fail("mode must be 'batch' or 'message'", { mode });
  const batchSize = options.batchSize ?? 100;
  if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > 10_000) {
    fail('batchSize must be an integer from 1 to 10000', { batchSize });
  }
  const fromBeginning: unknown = options.fromBeginning;
  if (fromBeginning !== undefined && typeof fromBeginning !== 'boolean') {
    fail('fromBeginning must be a boolean', { fromBeginning });
  }
  const concurrency = options.concurrency ?? 1;
  if (!Number.isInteger(concurrency) || concurrency < 1) {
    fail('concurrency must be a positive integer', { concurrency });
  }
  if (options.messageId?.header !== undefined && options.messageId.header === '') {
    fail('messageId.header must not be empty');
  }
  if (options.messageId?.extract !== undefined && typeof options.messageId.extract !== 'function') {
    fail('messageId.extract must be a function');
  }
  const fallback: unknown = options.messageId?.fallback;
  if (fallback !== undefined && typeof fallback !== 'boolean') {
    fail('messageId.fallback must be a boolean', { fallback });
  }
  const scopeHeader: unknown = options.scopeHeader;
  if (scopeHeader !== undefined && (typeof scopeHeader !== 'string' || scopeHeader === '')) {
    fail('scopeHeader must be a non-empty string', { scopeHeader });
  }
  if (options.onSettled !== undefined && typeof options.onSettled !== 'function') {
    fail('onSettled must be a function');
  }
}

function validateDeadLetter(deadLetter: KafkaDeadLetterOptions | undefined): void {
  if (deadLetter === undefined) return;
  if (typeof deadLetter !== 'object' || deadLetter === null) fail('deadLetter must be an object');
  const topic: unknown = deadLetter.topic;
  if (topic !== undefined && typeof topic !== 'function' && !isTopicName(topic)) {
    fail('invalid deadLetter.topic', { deadLetterTopic: topic });
  }
  const producer: unknown = deadLetter.producer;
  if (
    producer !== undefined &&
    (typeof producer !== 'object' ||
      producer === null ||
      typeof (producer as { send?: unknown }).send !== 'function')
  ) {
    fail('deadLetter.producer must be a producer (with send)');
  }
}

function validateGroup(config: Omit<KafkaConsumerConfig, 'groupId'>): void {
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
