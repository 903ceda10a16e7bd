import type { Message } from '@aws-sdk/client-sqs';
import type {
  KnexTransaction,
  BackoffOptions,
  Handler,
  Inbox,
  InboxOptions,
  Logger,
} from '@justonce/core';
import type {
  Consumer,
  Envelope,
  MessageIdOptions,
  ResilienceOptions,
  SettledEvent,
} from '@justonce/core/transport';
import type { SqsClientSource } from '../client/client';
import type { SqsTimeoutOptions } from '../client/time-limits';

/** An OpenTelemetry meter, as core's `InboxOptions.meter` takes it. */
export type SqsMeter = NonNullable<InboxOptions['meter']>;

/** Visibility heartbeat settings. */
export interface SqsHeartbeatOptions {
  /**
   * Extend the visibility timeout of held messages while their handler runs. Default
   * `true`. With `false`, a handler slower than the visibility timeout sees its message
   * delivered again while it still runs (the inbox then answers the copy as a duplicate once
   * the first run commits), and a store outage cannot hold messages in flight.
   */
  readonly enabled?: boolean;
  /**
   * How often held messages are extended, in milliseconds; each extension sets their
   * visibility to `visibilityTimeoutSeconds` from now. Must be below the visibility
   * timeout. Default a third of the visibility timeout.
   */
  readonly intervalMs?: number;
}

/** Where dead-lettered messages are forwarded. */
export interface SqsDeadLetterOptions {
  /**
   * Queue dead-lettered messages are sent to (then deleted from the source queue). Default:
   * the target of the queue's redrive policy when it has one; otherwise none, and the
   * store's dead letter is the only copy.
   */
  readonly queueUrl?: string;
}

/**
 * Options of {@link createSqsConsumer}. Give `client` or `clientConfig` (see
 * {@link SqsClientSource}).
 */
export interface SqsConsumerOptions<R = unknown, Tx = KnexTransaction> extends SqsClientSource {
  /** URL of the queue to consume. */
  readonly queueUrl: string;
  /**
   * The inbox (`createInbox(...)`). Give it `maxAttempts` below the queue's redrive
   * `maxReceiveCount` (so the inbox records the dead letter before SQS's redrive moves the
   * message; `start` warns when it is not, reading `inbox.settings`) and
   * `redeliveryHorizonMs` of the queue's `MessageRetentionPeriod`.
   */
  readonly inbox: Inbox<Tx>;
  /** Runs once per message id; its effects commit with the dedup record. */
  readonly handler: Handler<R, Tx>;
  /**
   * How messages reach the inbox:
   * - `message` (default) — one `inbox.process` transaction per message, up to
   *   `concurrency` at once.
   * - `batch` — each receive batch (up to min(10, `concurrency`) messages) in one
   *   `inbox.processBatch` transaction: fewer commits, more throughput; a failing message
   *   does not stop the others from committing. On a FIFO queue a batch runs in rounds
   *   (the first message of each group, then the second, ...), so each group stays in order.
   */
  readonly mode?: 'message' | 'batch';
  /**
   * Messages handled at once. Default 10. Up to min(10, `concurrency`) more are received
   * ahead and wait for a slot (their visibility is extended too), so handlers do not wait
   * on the long poll.
   */
  readonly concurrency?: number;
  /** Long-poll wait of each `ReceiveMessage`, 0–20 seconds. Default 20. */
  readonly waitTimeSeconds?: number;
  /**
   * Visibility timeout requested on receive and set by each heartbeat, 1–43 200 seconds.
   * Default: the queue's own `VisibilityTimeout`.
   */
  readonly visibilityTimeoutSeconds?: number;
  /** See {@link SqsHeartbeatOptions}. Default enabled, every third of the visibility timeout. */
  readonly heartbeat?: SqsHeartbeatOptions;
  /**
   * Backoff of the consumer's own retries (the inbox's `backoff` decides the retries of a
   * failed handler): the wait of a message held in flight through a store outage (capped at
   * 10 s), and how long a message whose processing threw otherwise stays hidden before SQS
   * delivers it again. Default `{ baseMs: 1 000, capMs: 300 000 }`.
   */
  readonly retry?: Pick<BackoffOptions, 'baseMs' | 'capMs'>;
  /** Where dead letters are forwarded; see {@link SqsDeadLetterOptions}. */
  readonly deadLetter?: SqsDeadLetterOptions;
  /**
   * Where the message id comes from: the message attribute `header` (default `message-id`),
   * then `extract`, then the SQS `MessageId` when `fallback` (default `true`) allows it.
   * The SQS `MessageId` recognises SQS's own redeliveries, not a producer sending the same
   * thing twice (each send gets a new `MessageId`).
   */
  readonly messageId?: MessageIdOptions<Message>;
  /** Message attribute holding the scope (tenant) of a message. Default `tenant`. */
  readonly scopeHeader?: string;
  /**
   * How long `stop` waits for running handlers when its own `timeoutMs` is not given, before
   * it aborts their `ctx.signal` and returns; their messages are reported `abandoned` and
   * come back after the visibility timeout (a late commit is not deleted: the redelivery is a
   * duplicate). Default 30 000.
   */
  readonly shutdownTimeoutMs?: number;
  /** Called after the consumer acted on each message; for metrics and tests. Must not throw. */
  readonly onSettled?: (event: SettledEvent<R, Message>) => void;
  /**
   * Retry budget and circuit breakers (docs/load-shedding.md): while the breaker is open the
   * messages in hand are held (not run, not charged) and no more are received once
   * `concurrency` are held; a retry the budget does not pay for waits `budget.spentDelayMs`
   * (its visibility timeout). Default: none.
   */
  readonly resilience?: ResilienceOptions<Envelope>;
  /** Where log lines go. Default: a silent logger. */
  readonly logger?: Logger;
  /** OpenTelemetry meter for the consumer's counters. Default: the global provider's `@justonce/core` meter. */
  readonly meter?: SqsMeter;
  /**
   * Time limits of the consumer's SQS calls; see {@link SqsTimeoutOptions}. Default
   * `{ connectMs: 5 000, requestMs: 10 000 }`: a `ReceiveMessage` may take `waitTimeSeconds`
   * plus 10 s, every other call 10 s.
   */
  readonly timeouts?: SqsTimeoutOptions;
}

/** What the consumer learned about its queue at `start`. */
export interface SqsQueueInfo {
  readonly queueUrl: string;
  /** Whether it is a FIFO queue. */
  readonly fifo: boolean;
  /** The queue's `VisibilityTimeout`, seconds. */
  readonly visibilityTimeoutSeconds: number;
  /** The queue's `MessageRetentionPeriod`, seconds: how long SQS may redeliver. */
  readonly retentionSeconds: number;
  /** `maxReceiveCount` of the queue's redrive policy, if it has one. */
  readonly maxReceiveCount: number | undefined;
  /** The dead-letter queue the consumer forwards to, if any. */
  readonly deadLetterQueueUrl: string | undefined;
}

/**
 * An SQS consumer around an inbox, with the one {@link Consumer} lifecycle. `start`
 * describes the queue and starts polling (it rejects with a typed error when the queue
 * cannot be described or the configuration does not fit it). `stop()` stops receiving,
 * releases messages not started yet, waits for running handlers (up to `timeoutMs`, default
 * `shutdownTimeoutMs`) and flushes pending deletes; `stop({ drain: false })` aborts the
 * handlers and releases every message in flight at once.
 */
export interface SqsConsumer extends Consumer {
  /** Messages received and not yet settled. */
  readonly inFlight: number;
  /** What `start` learned about the queue; `undefined` before. */
  readonly queue: SqsQueueInfo | undefined;
}
