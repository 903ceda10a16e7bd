import {
  optionKeys,
  rejectUnknownOptions,
  type Handler,
  type Inbox,
  type InboxOptions,
  type Logger,
  type Store,
} from '@justonce/core';
import { CONNECTION_KEYS, type ConnectionOptions } from '../amqp/connection';
import type { MessageIdExtractor, ScopeExtractor } from './envelope';
import type { RabbitConsumerEvent } from './events';

/** How failed messages are retried. */
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
  /**
   * Attempts before a message is dead-lettered, counted durably by the inbox. Passed to the
   * inbox the consumer builds (default 5 there); not allowed together with `inbox`.
   */
  readonly maxAttempts?: number;
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
 * Options of {@link createRabbitConsumer}. Give `url` or `connect`, the `queue`, the
 * `handler`, and either a ready `inbox` or a `store` (plus optional `consumer` name) for the
 * consumer to build one.
 */
export interface RabbitConsumerOptions<R = unknown> extends ConnectionOptions {
  /** The queue to consume from. Required; at most 255 bytes; not `amq.*`. */
  readonly queue: string;
  /** The handler; its effects commit if and only if the dedup record commits. */
  readonly handler: Handler<R>;
  /** A ready inbox. Give this, or `store`. */
  readonly inbox?: Inbox;
  /** The store for an inbox the consumer builds. Give this, or `inbox`. */
  readonly store?: Store;
  /** Consumer name for the inbox the consumer builds (dedup is per name). Default: `queue`. */
  readonly consumer?: string;
  /** Turns the raw body into `ctx.payload`; a throw dead-letters the message. Only with `store`. */
  readonly decode?: InboxOptions['decode'];
  /** Unacknowledged deliveries the broker may send ahead (`basic.qos`). Default 20. */
  readonly prefetch?: number;
  /** Handlers running at once; at most `prefetch`. Default 1 (queue order kept). */
  readonly concurrency?: number;
  /** Retry delays and attempts. */
  readonly retry?: RabbitRetryOptions;
  /** Exchange dead letters are published to. Default `<queue>.dlx`. */
  readonly deadLetterExchange?: string;
  /** Type the dead-letter exchange is declared with. Default `direct`. */
  readonly deadLetterExchangeType?: 'direct' | 'topic' | 'fanout' | 'headers';
  /**
   * Queue bound to the dead-letter exchange with the consumed queue's name as routing key.
   * Default `<queue>.dead`; `null` declares none (bind your own, or dead letters are
   * returned as unroutable and retried).
   */
  readonly deadLetterQueue?: string | null;
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
   * Finds the message id when neither `properties.messageId` nor a `message-id` header has
   * one. Default none: such messages are dead-lettered with reason `MISSING_MESSAGE_ID`.
   */
  readonly messageIdExtractor?: MessageIdExtractor;
  /** Finds the scope (tenant). Default: the `tenant` header; absent = the inbox's default. */
  readonly scopeExtractor?: ScopeExtractor;
  /**
   * Confirm timeout for retry and dead-letter publishes. Default 15 000 ms. When it fires the
   * connection is presumed dead: it is destroyed and reopened, and the delivery comes back.
   */
  readonly confirmTimeoutMs?: number;
  /** Reconnection backoff (defaults 100 / 10 000 ms). */
  readonly reconnect?: RabbitReconnectOptions;
  /**
   * Backoff between in-process retries of a delivery while the store is unavailable (the
   * inbox throws `STORE_UNAVAILABLE`): the delivery is held unacknowledged, so it is neither
   * redelivered nor charged an attempt. Defaults 200 / 5 000 ms.
   */
  readonly storeRetry?: RabbitBackoffOptions;
  /** How long `stop()` waits for running handlers. Default 30 000 ms. */
  readonly shutdownTimeoutMs?: number;
  /** Where the consumer logs. Default: silent. */
  readonly logger?: Logger;
  /** OpenTelemetry meter. Default: the global provider's. */
  readonly meter?: InboxOptions['meter'];
  /** Called synchronously for each {@link RabbitConsumerEvent}; must not throw. */
  readonly onEvent?: (event: RabbitConsumerEvent) => void;
}

const CONSUMER_KEYS = optionKeys<RabbitConsumerOptions>()([
  ...CONNECTION_KEYS,
  'queue',
  'handler',
  'inbox',
  'store',
  'consumer',
  'decode',
  'prefetch',
  'concurrency',
  'retry',
  'deadLetterExchange',
  'deadLetterExchangeType',
  'deadLetterQueue',
  'declareTopology',
  'durable',
  'queueArguments',
  'messageIdExtractor',
  'scopeExtractor',
  'confirmTimeoutMs',
  'reconnect',
  'storeRetry',
  'shutdownTimeoutMs',
  'logger',
  'meter',
  'onEvent',
]);
const RETRY_KEYS = optionKeys<RabbitRetryOptions>()([
  'delaysMs',
  'backoff',
  'ladderMs',
  'maxAttempts',
]);
const BACKOFF_KEYS = optionKeys<RabbitBackoffOptions>()(['baseMs', 'capMs']);

/**
 * Refuses keys {@link RabbitConsumerOptions} (or its `retry`, `reconnect` and `storeRetry`) do
 * not declare, e.g. a misspelling. `url` as an object and `queueArguments` belong to amqplib
 * and the broker, and are left to them. @internal
 */
export function rejectUnknownConsumerOptions(options: RabbitConsumerOptions<unknown>): void {
  const context = 'createRabbitConsumer';
  rejectUnknownOptions(options, CONSUMER_KEYS, context);
  rejectUnknownOptions(options.retry, RETRY_KEYS, context, 'retry');
  rejectUnknownOptions(options.reconnect, BACKOFF_KEYS, context, 'reconnect');
  rejectUnknownOptions(options.storeRetry, BACKOFF_KEYS, context, 'storeRetry');
}
