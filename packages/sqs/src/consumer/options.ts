import type { Message } from '@aws-sdk/client-sqs';
import { ConfigurationError, type Handler, type Inbox, type Logger } from '@justonce/core';
import {
  DEFAULT_MESSAGE_ID_HEADER,
  integerOption,
  optionKeys,
  rejectUnknownOptions,
  resolveLogger,
  resolveMeter,
  type MessageIdOptions,
  type ResolvedMessageId,
  type SettledEvent,
  optionalFunction,
  withResilience,
} from '@justonce/core/transport';
import { attributeNameProblem } from '../client/attributes';
import { isQueueUrl } from '../client/queue-names';
import { resolveTimeouts, type ResolvedTimeouts } from '../client/time-limits';
import type {
  SqsConsumerOptions,
  SqsDeadLetterOptions,
  SqsHeartbeatOptions,
  SqsMeter,
} from './types';

/** Longest visibility timeout SQS allows: 12 hours. */
export const MAX_VISIBILITY_SECONDS = 43_200;

/** Longest wait between two tries of a message held through a store outage. @internal */
export const STORE_OUTAGE_BACKOFF_CAP_MS = 10_000;

/** The factory's name, in configuration errors. */
const WHO = 'createSqsConsumer';

/** {@link SqsConsumerOptions} checked, with defaults applied. @internal */
export interface ResolvedConsumerOptions<R> {
  readonly queueUrl: string;
  readonly inbox: Inbox;
  readonly handler: Handler<R>;
  readonly mode: 'message' | 'batch';
  readonly concurrency: number;
  readonly waitTimeSeconds: number;
  readonly visibilityTimeoutSeconds: number | undefined;
  readonly heartbeatEnabled: boolean;
  readonly heartbeatIntervalMs: number | undefined;
  readonly retry: { readonly baseMs: number; readonly capMs: number };
  readonly deadLetterQueueUrl: string | undefined;
  readonly messageId: ResolvedMessageId<Message>;
  readonly scopeHeader: string;
  readonly shutdownTimeoutMs: number;
  readonly onSettled: ((event: SettledEvent<R, Message>) => void) | undefined;
  readonly logger: Logger;
  readonly meter: SqsMeter;
  readonly timeouts: ResolvedTimeouts;
}

const CONSUMER_KEYS = optionKeys<SqsConsumerOptions>()([
  'client',
  'clientConfig',
  'queueUrl',
  'inbox',
  'handler',
  'mode',
  'concurrency',
  'waitTimeSeconds',
  'visibilityTimeoutSeconds',
  'heartbeat',
  'retry',
  'deadLetter',
  'messageId',
  'scopeHeader',
  'shutdownTimeoutMs',
  'onSettled',
  'resilience',
  'logger',
  'meter',
  'timeouts',
]);
const HEARTBEAT_KEYS = optionKeys<SqsHeartbeatOptions>()(['enabled', 'intervalMs']);
const RETRY_KEYS = optionKeys<NonNullable<SqsConsumerOptions['retry']>>()(['baseMs', 'capMs']);
const DEAD_LETTER_KEYS = optionKeys<SqsDeadLetterOptions>()(['queueUrl']);
const MESSAGE_ID_KEYS = optionKeys<MessageIdOptions<Message>>()(['header', 'extract', 'fallback']);

/**
 * Refuses keys the options (or their nested objects) do not declare, e.g. a misspelling.
 * `clientConfig` is the AWS SDK's own and left to it.
 */
function rejectUnknownKeys<R>(options: SqsConsumerOptions<R>): void {
  rejectUnknownOptions(options, CONSUMER_KEYS, WHO);
  rejectUnknownOptions(options.heartbeat, HEARTBEAT_KEYS, WHO, 'heartbeat');
  rejectUnknownOptions(options.retry, RETRY_KEYS, WHO, 'retry');
  rejectUnknownOptions(options.deadLetter, DEAD_LETTER_KEYS, WHO, 'deadLetter');
  rejectUnknownOptions(options.messageId, MESSAGE_ID_KEYS, WHO, 'messageId');
}

function isInbox(value: unknown): value is Inbox {
  const v = value as Partial<Inbox> | null;
  return (
    typeof v === 'object' &&
    v !== null &&
    typeof v.process === 'function' &&
    typeof v.processBatch === 'function'
  );
}

function attributeName(value: unknown, fallback: string, name: string): string {
  if (value === undefined) return fallback;
  const problem = typeof value === 'string' ? attributeNameProblem(value) : 'must be a string';
  if (problem !== undefined) {
    throw new ConfigurationError(`${name}: ${problem}`, { [name]: value });
  }
  return value as string;
}

function resolveRetry(retry: SqsConsumerOptions['retry']): ResolvedConsumerOptions<never>['retry'] {
  const baseMs = integerOption(retry?.baseMs, 'retry.baseMs', 1_000, 0, 3_600_000);
  const capMs = integerOption(
    retry?.capMs,
    'retry.capMs',
    300_000,
    baseMs,
    MAX_VISIBILITY_SECONDS * 1000,
  );
  return { baseMs, capMs };
}

/** The visibility and heartbeat options, checked against each other. */
function resolveVisibility(
  options: Pick<SqsConsumerOptions, 'visibilityTimeoutSeconds' | 'heartbeat'>,
) {
  const visibilityTimeoutSeconds =
    options.visibilityTimeoutSeconds === undefined
      ? undefined
      : integerOption(
          options.visibilityTimeoutSeconds,
          'visibilityTimeoutSeconds',
          0,
          1,
          MAX_VISIBILITY_SECONDS,
        );
  const heartbeat = options.heartbeat ?? {};
  if (typeof heartbeat !== 'object' || heartbeat === null) {
    throw new ConfigurationError('heartbeat must be an object');
  }
  if (heartbeat.enabled !== undefined && typeof heartbeat.enabled !== 'boolean') {
    throw new ConfigurationError('heartbeat.enabled must be a boolean');
  }
  const heartbeatIntervalMs =
    heartbeat.intervalMs === undefined
      ? undefined
      : integerOption(heartbeat.intervalMs, 'heartbeat.intervalMs', 0, 100, 43_200_000);
  if (
    heartbeatIntervalMs !== undefined &&
    visibilityTimeoutSeconds !== undefined &&
    heartbeatIntervalMs >= visibilityTimeoutSeconds * 1000
  ) {
    throw new ConfigurationError(
      'heartbeat.intervalMs must be below the visibility timeout, or messages expire between heartbeats',
      { intervalMs: heartbeatIntervalMs, visibilityTimeoutSeconds },
    );
  }
  return {
    visibilityTimeoutSeconds,
    heartbeatEnabled: heartbeat.enabled ?? true,
    heartbeatIntervalMs,
  };
}

function resolveDeadLetterQueue(
  deadLetter: SqsConsumerOptions['deadLetter'],
  queueUrl: string,
): string | undefined {
  if (deadLetter === undefined) return undefined;
  if (typeof deadLetter !== 'object' || deadLetter === null) {
    throw new ConfigurationError('deadLetter must be an object ({ queueUrl })');
  }
  const url = deadLetter.queueUrl;
  if (url !== undefined && (typeof url !== 'string' || !isQueueUrl(url))) {
    throw new ConfigurationError('deadLetter.queueUrl must be an SQS queue URL', {
      deadLetterQueueUrl: url,
    });
  }
  if (url === queueUrl) {
    throw new ConfigurationError('deadLetter.queueUrl must not be the queue itself', { queueUrl });
  }
  return url;
}

function resolveMessageId(options: SqsConsumerOptions['messageId']): ResolvedMessageId<Message> {
  const messageId = options ?? {};
  if (typeof messageId !== 'object' || messageId === null) {
    throw new ConfigurationError('messageId must be an object');
  }
  const fallback = messageId.fallback ?? true;
  if (typeof fallback !== 'boolean') {
    throw new ConfigurationError('messageId.fallback must be a boolean');
  }
  return {
    header: attributeName(messageId.header, DEFAULT_MESSAGE_ID_HEADER, 'messageId.header'),
    extract: optionalFunction(messageId.extract, 'messageId.extract'),
    fallback,
  };
}

/** Validates consumer options; every problem is a {@link ConfigurationError}. @internal */
export function resolveConsumerOptions<R>(
  options: SqsConsumerOptions<R>,
): ResolvedConsumerOptions<R> {
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new ConfigurationError(`${WHO} needs options`);
  }
  rejectUnknownKeys(options);
  const { queueUrl } = options;
  if (typeof queueUrl !== 'string' || !isQueueUrl(queueUrl)) {
    throw new ConfigurationError('queueUrl must be an SQS queue URL', { queueUrl });
  }
  const handler = optionalFunction<Handler<R>>(options.handler, 'handler');
  if (handler === undefined) throw new ConfigurationError(`${WHO} needs a handler`);
  if (!isInbox(options.inbox)) {
    throw new ConfigurationError('inbox must be an Inbox (createInbox(...))');
  }
  const logger = resolveLogger(options.logger);
  const mode = options.mode ?? 'message';
  if (mode !== 'message' && mode !== 'batch') {
    throw new ConfigurationError('mode must be message or batch', { mode });
  }
  // Counters are all the consumer creates; core's check says which method is missing.
  const meter = resolveMeter(options.meter, ['createCounter']);
  return {
    queueUrl,
    inbox:
      options.resilience === undefined
        ? options.inbox
        : withResilience(options.inbox, options.resilience, WHO),
    handler,
    mode,
    concurrency: integerOption(options.concurrency, 'concurrency', 10, 1, 1_000),
    waitTimeSeconds: integerOption(options.waitTimeSeconds, 'waitTimeSeconds', 20, 0, 20),
    ...resolveVisibility(options),
    retry: resolveRetry(options.retry),
    deadLetterQueueUrl: resolveDeadLetterQueue(options.deadLetter, queueUrl),
    messageId: resolveMessageId(options.messageId),
    scopeHeader: attributeName(options.scopeHeader, 'tenant', 'scopeHeader'),
    shutdownTimeoutMs: integerOption(
      options.shutdownTimeoutMs,
      'shutdownTimeoutMs',
      30_000,
      0,
      3_600_000,
    ),
    onSettled: optionalFunction(options.onSettled, 'onSettled'),
    logger,
    meter,
    timeouts: resolveTimeouts(options.timeouts, WHO),
  };
}
