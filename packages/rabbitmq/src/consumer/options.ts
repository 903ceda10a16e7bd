import {
  ConfigurationError,
  type Handler,
  type Inbox,
  type KnexTransaction,
  type InboxOptions,
  type Logger,
} from '@justonce/core';
import {
  optionKeys,
  rejectUnknownOptions,
  resolveLogger,
  resolveMessageIdOptions,
  withResilience,
  type Envelope,
  type MessageIdOptions,
  type ResilienceOptions,
  type ResolvedMessageId,
  type SettledEvent,
  integerOption,
  positiveIntegerOption,
} from '@justonce/core/transport';
import type { ConsumeMessage } from 'amqplib';
import {
  CONNECTION_KEYS,
  resolveConnection,
  type ConnectionOptions,
  type ConnectionSettings,
} from '../client/connection';
import { backoffOption } from '../outage/backoff-option';
import type { RabbitConnectionEvent } from './types';
import { retryDelays, type RetryDelays } from './topology/retry-delays';
import type { TopologySettings } from './topology/declare';
import { queueFrom, topologyFrom, type RabbitDeadLetterOptions } from './topology/options';

export type { RabbitDeadLetterOptions } from './topology/options';

/** How failed messages are retried. The attempts allowed are the inbox's `maxAttempts`. */
export interface RabbitRetryOptions {
  /**
   * Fixed delays in ms: failed attempt `n` waits `delaysMs[n-1]`, the last entry repeating.
   * One retry queue per distinct delay. Give this or `backoff`, not both.
   */
  readonly delaysMs?: readonly number[];
  /**
   * Delay in ms after failed attempt `attempt` (1-based), rounded up to the next step of
   * `ladderMs`. Default: the inbox's suggested delay (`retryDelayMs`), rounded the same way.
   */
  readonly backoff?: (attempt: number) => number;
  /**
   * The retry queue delays computed delays are rounded up to. Default
   * {@link DEFAULT_DELAY_LADDER_MS} (100 ms … 1 h). Ignored with `delaysMs`.
   */
  readonly ladderMs?: readonly number[];
}

/**
 * A capped full-jitter backoff: attempt `n` waits a random time below
 * `min(capMs, baseMs · 2^(n-1))`.
 */
export interface RabbitBackoffOptions {
  /** First delay ceiling in ms. */
  readonly baseMs?: number;
  /** Largest delay ceiling in ms. */
  readonly capMs?: number;
}

/** Reconnection backoff after the connection or channel is lost. Defaults 100 / 10 000 ms. */
export type RabbitReconnectOptions = RabbitBackoffOptions;

/**
 * Options of {@link createRabbitConsumer}: `url` or `connect`, the `queue`, the `inbox` and
 * the `handler`; the rest has defaults.
 */
export interface RabbitConsumerOptions<
  R = unknown,
  Tx = KnexTransaction,
> extends ConnectionOptions {
  /**
   * The queue to consume from. Required; at most 236 bytes (its retry queues' names, the
   * queue's and `.retry.<delay>ms`, must fit AMQP's 255); not `amq.*`.
   */
  readonly queue: string;
  /** The handler; its effects commit if and only if the dedup record commits. */
  readonly handler: Handler<R, Tx>;
  /** The inbox (its store, consumer name, `maxAttempts`, `decode`, …). Required. */
  readonly inbox: Inbox<Tx>;
  /**
   * Where the message id is found: the `message-id` header (any case), then `extract`, then
   * (with `fallback`, the default) the AMQP `message-id` property. A message with none is
   * dead-lettered (`MISSING_MESSAGE_ID`).
   */
  readonly messageId?: MessageIdOptions<ConsumeMessage>;
  /** Header holding the scope (tenant). Default `tenant`; absent = the inbox's default scope. */
  readonly scopeHeader?: string;
  /** Unacknowledged deliveries the broker may send ahead (`basic.qos`). Default 20. */
  readonly prefetch?: number;
  /**
   * Handlers (in `batch` mode: batches) running at once; at most `prefetch`. Default 1
   * (queue order kept).
   */
  readonly concurrency?: number;
  /**
   * How deliveries go through the inbox:
   * - `message` (default) — one `inbox.process` transaction per delivery.
   * - `batch` — the deliveries waiting together (up to `batchSize`) in one
   *   `inbox.processBatch` transaction: fewer commits, more throughput; a failing message
   *   does not stop the others from committing. Each is then acked, retried or
   *   dead-lettered on its own, as in message mode; a store outage holds the whole batch.
   */
  readonly mode?: 'message' | 'batch';
  /**
   * Most deliveries in one batch (`batch` mode); at most `prefetch`, since the broker never
   * has more out. Default 50, or `prefetch` if lower.
   */
  readonly batchSize?: number;
  /**
   * How long a batch that is not full waits for more deliveries before it runs (`batch`
   * mode), in ms; 0 to 1 000. RabbitMQ pushes deliveries one by one, so an idle consumer
   * would otherwise start a batch of one with the first of a burst. Default 5.
   */
  readonly batchWaitMs?: number;
  /** Retry delays (the retry queues). */
  readonly retry?: RabbitRetryOptions;
  /** The dead-letter exchange and queue. */
  readonly deadLetter?: RabbitDeadLetterOptions;
  /**
   * Declare the queue, the dead-letter exchange and queue, and the retry queues. Default
   * true. With false they are only checked, and must exist (retry queues included).
   */
  readonly declareTopology?: boolean;
  /** Declare queues durable (and the dead-letter exchange). Default true. */
  readonly durable?: boolean;
  /** Arguments of the consumed queue, e.g. `{ 'x-queue-type': 'quorum' }`. Default none. */
  readonly queueArguments?: Readonly<Record<string, unknown>>;
  /**
   * Confirm timeout for retry and dead-letter publishes. Default 15 000 ms. When it fires the
   * connection is presumed dead: it is destroyed and reopened, and the delivery comes back.
   */
  readonly confirmTimeoutMs?: number;
  /** Reconnection backoff (defaults 100 / 10 000 ms). */
  readonly reconnect?: RabbitReconnectOptions;
  /**
   * Backoff between in-process retries of a delivery while the store is unavailable (the
   * inbox throws `STORE_UNAVAILABLE`): the delivery is held unacknowledged (`held`), so it
   * is neither redelivered nor charged an attempt. Defaults 200 / 5 000 ms.
   */
  readonly storeRetry?: RabbitBackoffOptions;
  /** Where the consumer logs. Default: silent. */
  readonly logger?: Logger;
  /** OpenTelemetry meter. Default: the global provider's. */
  readonly meter?: InboxOptions['meter'];
  /** Called synchronously for each delivery settled (and each hold); must not throw. */
  readonly onSettled?: (event: SettledEvent<R, ConsumeMessage>) => void;
  /**
   * Retry budget and circuit breakers (docs/load-shedding.md): while the breaker is open the
   * deliveries in hand are held unacknowledged (not run, not charged), so the broker sends
   * no more than `prefetch`; a retry the budget does not pay for waits `budget.spentDelayMs`
   * (its delay tier). Default: none.
   */
  readonly resilience?: ResilienceOptions<Envelope>;
  /** Called synchronously for each {@link RabbitConnectionEvent}; must not throw. */
  readonly onConnection?: (event: RabbitConnectionEvent) => void;
}

const CONSUMER_KEYS = optionKeys<RabbitConsumerOptions>()([
  ...CONNECTION_KEYS,
  'queue',
  'handler',
  'inbox',
  'messageId',
  'scopeHeader',
  'prefetch',
  'concurrency',
  'mode',
  'batchSize',
  'batchWaitMs',
  'retry',
  'deadLetter',
  'declareTopology',
  'durable',
  'queueArguments',
  'confirmTimeoutMs',
  'reconnect',
  'storeRetry',
  'logger',
  'meter',
  'onSettled',
  'onConnection',
  'resilience',
]);
const RETRY_KEYS = optionKeys<RabbitRetryOptions>()(['delaysMs', 'backoff', 'ladderMs']);
const BACKOFF_KEYS = optionKeys<RabbitBackoffOptions>()(['baseMs', 'capMs']);
const DEAD_LETTER_KEYS = optionKeys<RabbitDeadLetterOptions>()([
  'exchange',
  'exchangeType',
  'queue',
]);
const MESSAGE_ID_KEYS = optionKeys<MessageIdOptions>()(['header', 'extract', 'fallback']);

/**
 * Refuses keys {@link RabbitConsumerOptions} (or its nested objects) do not declare, e.g. a
 * misspelling. `url` as an object and `queueArguments` belong to amqplib and the broker, and
 * are left to them. @internal
 */
export function rejectUnknownConsumerOptions(options: RabbitConsumerOptions<unknown>): void {
  const context = 'createRabbitConsumer';
  rejectUnknownOptions(options, CONSUMER_KEYS, context);
  rejectUnknownOptions(options.retry, RETRY_KEYS, context, 'retry');
  rejectUnknownOptions(options.reconnect, BACKOFF_KEYS, context, 'reconnect');
  rejectUnknownOptions(options.storeRetry, BACKOFF_KEYS, context, 'storeRetry');
  rejectUnknownOptions(options.deadLetter, DEAD_LETTER_KEYS, context, 'deadLetter');
  rejectUnknownOptions(options.messageId, MESSAGE_ID_KEYS, context, 'messageId');
}

/** {@link RabbitConsumerOptions}, checked, with the defaults applied. @internal */
export interface ResolvedConsumerOptions<R> {
  readonly queue: string;
  readonly connection: ConnectionSettings;
  readonly handler: Handler<R>;
  readonly inbox: Inbox;
  readonly messageId: ResolvedMessageId<ConsumeMessage>;
  readonly scopeHeader: string;
  readonly prefetch: number;
  readonly concurrency: number;
  readonly mode: 'message' | 'batch';
  /** Deliveries per run of the work queue: 1 in message mode. */
  readonly batchSize: number;
  /** How long a short batch waits to fill: 0 in message mode. */
  readonly batchWaitMs: number;
  readonly confirmTimeoutMs: number;
  readonly reconnect: { readonly baseMs: number; readonly capMs: number };
  readonly storeRetry: { readonly baseMs: number; readonly capMs: number };
  readonly delays: RetryDelays;
  readonly topology: TopologySettings;
  readonly logger: Logger;
  readonly meter: InboxOptions['meter'];
  readonly onSettled: ((event: SettledEvent<R, ConsumeMessage>) => void) | undefined;
  readonly onConnection: ((event: RabbitConnectionEvent) => void) | undefined;
}

/** Validates `options` (unknown keys included) and applies the defaults. @internal */
export function resolveConsumerOptions<R>(
  options: RabbitConsumerOptions<R>,
): ResolvedConsumerOptions<R> {
  rejectUnknownConsumerOptions(options as RabbitConsumerOptions<unknown>);
  const queue = queueFrom(options.queue);
  const connection = resolveConnection(options, 'createRabbitConsumer', `justonce:${queue}`);
  if (typeof options.handler !== 'function') {
    throw new ConfigurationError('createRabbitConsumer: handler must be a function');
  }
  const prefetch = positiveIntegerOption(options.prefetch, 'prefetch', 20);
  const concurrency = positiveIntegerOption(options.concurrency, 'concurrency', 1);
  if (concurrency > prefetch) {
    throw new ConfigurationError('concurrency cannot exceed prefetch', { concurrency, prefetch });
  }
  const batching = batchingFrom(options, prefetch);
  return {
    queue,
    connection,
    handler: options.handler,
    inbox: inboxFrom(options, batching.mode),
    messageId: messageIdFrom(options.messageId),
    scopeHeader: scopeHeaderFrom(options.scopeHeader),
    prefetch,
    concurrency,
    ...batching,
    confirmTimeoutMs: positiveIntegerOption(options.confirmTimeoutMs, 'confirmTimeoutMs', 15_000),
    reconnect: backoffOption(options.reconnect, 'reconnect', { baseMs: 100, capMs: 10_000 }),
    storeRetry: backoffOption(options.storeRetry, 'storeRetry', { baseMs: 200, capMs: 5_000 }),
    delays: retryDelays(options.retry ?? {}),
    topology: topologyFrom(options, queue),
    logger: resolveLogger(options.logger),
    meter: options.meter,
    onSettled: hook(options.onSettled, 'onSettled'),
    onConnection: hook(options.onConnection, 'onConnection'),
  };
}

/** `mode`, `batchSize` and `batchWaitMs`, checked; the batch ones are taken in message mode too. */
function batchingFrom(
  options: Pick<RabbitConsumerOptions, 'mode' | 'batchSize' | 'batchWaitMs'>,
  prefetch: number,
): Pick<ResolvedConsumerOptions<unknown>, 'mode' | 'batchSize' | 'batchWaitMs'> {
  const mode = options.mode ?? 'message';
  if (mode !== 'message' && mode !== 'batch') {
    throw new ConfigurationError('mode must be message or batch', { mode });
  }
  const batchSize = positiveIntegerOption(options.batchSize, 'batchSize', Math.min(50, prefetch));
  // The broker never has more than `prefetch` deliveries out: a larger batch could not fill.
  if (batchSize > prefetch) {
    throw new ConfigurationError('batchSize cannot exceed prefetch', { batchSize, prefetch });
  }
  const batchWaitMs = integerOption(options.batchWaitMs, 'batchWaitMs', 5, 0, 1_000);
  return mode === 'batch'
    ? { mode, batchSize, batchWaitMs }
    : { mode, batchSize: 1, batchWaitMs: 0 };
}

function hook<F>(value: F | undefined, what: string): F | undefined {
  if (value !== undefined && typeof value !== 'function') {
    throw new ConfigurationError(`createRabbitConsumer: ${what} must be a function`);
  }
  return value;
}

function inboxFrom(
  options: Pick<RabbitConsumerOptions, 'inbox' | 'resilience'>,
  mode: ResolvedConsumerOptions<unknown>['mode'],
): Inbox {
  const inbox: unknown = options.inbox;
  // The inbox is duck-typed: anything with `process` (in batch mode `processBatch`) and its
  // consumer name will do.
  const method = mode === 'batch' ? 'processBatch' : 'process';
  if (
    typeof inbox !== 'object' ||
    inbox === null ||
    typeof (inbox as Partial<Inbox>)[method] !== 'function'
  ) {
    throw new ConfigurationError(
      'createRabbitConsumer: inbox must be an Inbox (createInbox({ store, consumer, … }))',
    );
  }
  return options.resilience === undefined
    ? (inbox as Inbox)
    : withResilience(inbox as Inbox, options.resilience, 'createRabbitConsumer');
}

function messageIdFrom(
  value: MessageIdOptions<ConsumeMessage> | undefined,
): ResolvedMessageId<ConsumeMessage> {
  const resolved = resolveMessageIdOptions(value);
  if (resolved.extract !== undefined && typeof resolved.extract !== 'function') {
    throw new ConfigurationError('messageId.extract must be a function');
  }
  if (typeof resolved.header !== 'string' || resolved.header === '') {
    throw new ConfigurationError('messageId.header must be a non-empty string');
  }
  if (typeof resolved.fallback !== 'boolean') {
    throw new ConfigurationError('messageId.fallback must be a boolean');
  }
  return resolved;
}

function scopeHeaderFrom(value: unknown): string {
  if (value === undefined) return 'tenant';
  if (typeof value !== 'string' || value === '') {
    throw new ConfigurationError('scopeHeader must be a non-empty string');
  }
  return value;
}
