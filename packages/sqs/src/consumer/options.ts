import {
  ConfigurationError,
  createInbox,
  integerOption,
  MESSAGE_ID_HEADER,
  optionKeys,
  rejectUnknownOptions,
  silentLogger,
  type Envelope,
  type Handler,
  type Inbox,
  type Logger,
} from '@justonce/core';
import { attributeNameProblem } from '../attributes';
import type { ResolvedMessageIdOptions, SqsMessageIdOptions } from '../message-id';
import { isQueueUrl } from '../queue-names';
import { resolveTimeouts, type ResolvedTimeouts } from '../time-limits';
import type {
  SqsHeartbeatOptions,
  SqsInboxSettings,
  SqsMeter,
  SqsSettledEvent,
  SqsWorkerOptions,
} from './types';

/** Longest visibility timeout SQS allows: 12 hours. */
export const MAX_VISIBILITY_SECONDS = 43_200;

/** {@link SqsWorkerOptions} checked, with defaults applied. @internal */
export interface ResolvedWorkerOptions<R> {
  readonly queueUrl: string;
  /** The caller's inbox, or `undefined` when the worker creates one from `inboxSettings`. */
  readonly inbox: Inbox | undefined;
  readonly inboxSettings: SqsInboxSettings | undefined;
  readonly handler: Handler<R>;
  readonly mode: 'message' | 'batch';
  readonly concurrency: number;
  readonly waitTimeSeconds: number;
  readonly visibilityTimeoutSeconds: number | undefined;
  readonly heartbeatEnabled: boolean;
  readonly heartbeatIntervalMs: number | undefined;
  readonly retry: { readonly baseMs: number; readonly capMs: number };
  readonly deadLetterQueueUrl: string | undefined;
  readonly messageId: ResolvedMessageIdOptions;
  readonly scopeAttribute: string;
  readonly decode: ((body: Uint8Array | string, envelope: Envelope) => unknown) | undefined;
  readonly shutdownTimeoutMs: number;
  readonly onSettled: ((event: SqsSettledEvent<R>) => void) | undefined;
  readonly logger: Logger;
  readonly meter: SqsMeter | undefined;
  readonly timeouts: ResolvedTimeouts;
}

const WORKER_KEYS = optionKeys<SqsWorkerOptions>()([
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
  'deadLetterQueueUrl',
  'messageId',
  'scopeAttribute',
  'decode',
  'shutdownTimeoutMs',
  'onSettled',
  'logger',
  'meter',
  'timeouts',
]);
const HEARTBEAT_KEYS = optionKeys<SqsHeartbeatOptions>()(['enabled', 'intervalMs']);
const RETRY_KEYS = optionKeys<NonNullable<SqsWorkerOptions['retry']>>()(['baseMs', 'capMs']);
const MESSAGE_ID_KEYS = optionKeys<SqsMessageIdOptions>()([
  'attribute',
  'extract',
  'fallbackToSqsMessageId',
]);
const INBOX_SETTINGS_KEYS = optionKeys<SqsInboxSettings>()([
  'store',
  'consumer',
  'defaultScope',
  'maxAttempts',
  'maxIdLength',
  'fingerprintHeaders',
  'outbox',
  'retentionMs',
  'onStep',
  'logPayloads',
  'alwaysCountAttempts',
  'classify',
]);

/**
 * Refuses keys the options (or their nested objects) do not declare, e.g. a misspelling.
 * `clientConfig` is the AWS SDK's own and left to it. Inbox settings the worker sets itself
 * (`decode`, `logger`, `meter`, `backoff`, `redeliveryHorizonMs`) are refused there too:
 * they would be overridden in silence.
 */
function rejectUnknownKeys<R>(options: SqsWorkerOptions<R>): void {
  const context = 'createSqsWorker';
  rejectUnknownOptions(options, WORKER_KEYS, context);
  rejectUnknownOptions(options.heartbeat, HEARTBEAT_KEYS, context, 'heartbeat');
  rejectUnknownOptions(options.retry, RETRY_KEYS, context, 'retry');
  rejectUnknownOptions(options.messageId, MESSAGE_ID_KEYS, context, 'messageId');
  if (!isInbox(options.inbox)) {
    rejectUnknownOptions(options.inbox, INBOX_SETTINGS_KEYS, context, 'inbox');
  }
}

function isInbox(value: unknown): value is Inbox {
  const v = value as Partial<Inbox> | null;
  return typeof v === 'object' && v !== null && typeof v.process === 'function';
}

function optionalFunction<F>(value: unknown, name: string): F | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'function') {
    throw new ConfigurationError(`${name} must be a function`, { [name]: typeof value });
  }
  return value as F;
}

function attributeName(value: unknown, fallback: string, name: string): string {
  if (value === undefined) return fallback;
  const problem = typeof value === 'string' ? attributeNameProblem(value) : 'must be a string';
  if (problem !== undefined) {
    throw new ConfigurationError(`${name}: ${problem}`, { [name]: value });
  }
  return value as string;
}

/** Validates worker options; every problem is a {@link ConfigurationError}. @internal */
export function resolveWorkerOptions<R>(options: SqsWorkerOptions<R>): ResolvedWorkerOptions<R> {
  if (typeof options !== 'object' || options === null) {
    throw new ConfigurationError('createSqsWorker needs options');
  }
  rejectUnknownKeys(options);
  const { queueUrl } = options;
  if (typeof queueUrl !== 'string' || !isQueueUrl(queueUrl)) {
    throw new ConfigurationError('queueUrl must be an SQS queue URL', { queueUrl });
  }
  const handler = optionalFunction<Handler<R>>(options.handler, 'handler');
  if (handler === undefined) throw new ConfigurationError('createSqsWorker needs a handler');
  const logger = options.logger ?? silentLogger;
  if (
    typeof logger !== 'object' ||
    logger === null ||
    (['debug', 'info', 'warn', 'error'] as const).some((m) => typeof logger[m] !== 'function')
  ) {
    throw new ConfigurationError('logger must have debug, info, warn and error methods');
  }
  const decode = optionalFunction<ResolvedWorkerOptions<R>['decode']>(options.decode, 'decode');
  const baseMs = integerOption(options.retry?.baseMs, 1_000, 'retry.baseMs', 0, 3_600_000);
  const capMs = integerOption(
    options.retry?.capMs,
    300_000,
    'retry.capMs',
    baseMs,
    MAX_VISIBILITY_SECONDS * 1000,
  );

  let inbox: Inbox | undefined;
  let inboxSettings: SqsInboxSettings | undefined;
  if (isInbox(options.inbox)) {
    inbox = options.inbox;
    if (decode !== undefined) {
      throw new ConfigurationError(
        'decode applies to an inbox the worker creates; give your own inbox its decode option',
      );
    }
  } else if (typeof options.inbox === 'object' && options.inbox !== null) {
    inboxSettings = options.inbox;
    // Fails now, with the inbox's own ConfigurationError, for settings that cannot work.
    createInbox({
      ...inboxSettings,
      decode,
      logger,
      meter: options.meter,
      backoff: { baseMs, capMs },
    });
  } else {
    throw new ConfigurationError(
      'inbox must be an Inbox (createInbox(...)) or inbox settings ({ store, consumer, ... })',
    );
  }

  const visibilityTimeoutSeconds =
    options.visibilityTimeoutSeconds === undefined
      ? undefined
      : integerOption(
          options.visibilityTimeoutSeconds,
          0,
          'visibilityTimeoutSeconds',
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
      : integerOption(heartbeat.intervalMs, 0, 'heartbeat.intervalMs', 100, 43_200_000);
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

  const deadLetterQueueUrl = options.deadLetterQueueUrl;
  if (
    deadLetterQueueUrl !== undefined &&
    (typeof deadLetterQueueUrl !== 'string' || !isQueueUrl(deadLetterQueueUrl))
  ) {
    throw new ConfigurationError('deadLetterQueueUrl must be an SQS queue URL', {
      deadLetterQueueUrl,
    });
  }
  if (deadLetterQueueUrl === queueUrl) {
    throw new ConfigurationError('deadLetterQueueUrl must not be the queue itself', { queueUrl });
  }

  const messageIdOptions = options.messageId ?? {};
  if (typeof messageIdOptions !== 'object' || messageIdOptions === null) {
    throw new ConfigurationError('messageId must be an object');
  }
  const fallback = messageIdOptions.fallbackToSqsMessageId ?? true;
  if (typeof fallback !== 'boolean') {
    throw new ConfigurationError('messageId.fallbackToSqsMessageId must be a boolean');
  }

  const mode = options.mode ?? 'message';
  if (mode !== 'message' && mode !== 'batch') {
    throw new ConfigurationError('mode must be message or batch', { mode });
  }

  const meter = options.meter;
  if (
    meter !== undefined &&
    (typeof meter !== 'object' || typeof meter?.createCounter !== 'function')
  ) {
    throw new ConfigurationError('meter must be an OpenTelemetry Meter');
  }

  return {
    queueUrl,
    inbox,
    inboxSettings,
    handler,
    mode,
    concurrency: integerOption(options.concurrency, 10, 'concurrency', 1, 1_000),
    waitTimeSeconds: integerOption(options.waitTimeSeconds, 20, 'waitTimeSeconds', 0, 20),
    visibilityTimeoutSeconds,
    heartbeatEnabled: heartbeat.enabled ?? true,
    heartbeatIntervalMs,
    retry: { baseMs, capMs },
    deadLetterQueueUrl,
    messageId: {
      attribute: attributeName(
        messageIdOptions.attribute,
        MESSAGE_ID_HEADER,
        'messageId.attribute',
      ),
      extract: optionalFunction(messageIdOptions.extract, 'messageId.extract'),
      fallbackToSqsMessageId: fallback,
    },
    scopeAttribute: attributeName(options.scopeAttribute, 'tenant', 'scopeAttribute'),
    decode,
    shutdownTimeoutMs: integerOption(
      options.shutdownTimeoutMs,
      30_000,
      'shutdownTimeoutMs',
      0,
      3_600_000,
    ),
    onSettled: optionalFunction(options.onSettled, 'onSettled'),
    logger,
    meter,
    timeouts: resolveTimeouts(options.timeouts, 'createSqsWorker'),
  };
}
