import type { Message } from '@aws-sdk/client-sqs';
import type {
  BackoffOptions,
  Envelope,
  Handler,
  Inbox,
  InboxOptions,
  InboxOutcome,
  Logger,
} from '@justonce/core';
import type { SqsClientSource } from '../client';
import type { SqsMessageIdOptions } from '../message-id';
import type { SqsTimeoutOptions } from '../time-limits';

/** An OpenTelemetry meter, as core's `InboxOptions.meter` takes it. */
export type SqsMeter = NonNullable<InboxOptions['meter']>;

/**
 * Inbox options for an inbox the worker creates for you. The worker adds what it knows:
 * `redeliveryHorizonMs` from the queue's `MessageRetentionPeriod` (and `retentionMs` at
 * least that long unless you set it), `decode`, `logger` and `meter` from the worker's
 * options, `backoff` from `retry`, and — when the queue has a redrive policy and you leave
 * `maxAttempts` unset — `maxAttempts` = min(5, maxReceiveCount − 1), so the inbox gives up
 * (and records the dead letter in the store) before SQS's redrive would move the message.
 */
export type SqsInboxSettings = Omit<
  InboxOptions,
  'redeliveryHorizonMs' | 'decode' | 'logger' | 'meter' | 'backoff'
>;

/** Visibility heartbeat settings. */
export interface SqsHeartbeatOptions {
  /**
   * Extend the visibility timeout of held messages while their handler runs. Default
   * `true`. With `false`, a handler slower than the visibility timeout sees its message
   * delivered again while it still runs (the inbox then answers the copy as a duplicate once
   * the first run commits).
   */
  readonly enabled?: boolean;
  /**
   * How often held messages are extended, in milliseconds; each extension sets their
   * visibility to `visibilityTimeoutSeconds` from now. Must be below the visibility
   * timeout. Default a third of the visibility timeout.
   */
  readonly intervalMs?: number;
}

/** What the worker did with a message after the inbox's outcome. */
export type SqsWorkerAction =
  /** Deleted from the queue (processed, duplicate, or dead-lettered and forwarded). */
  | 'deleted'
  /** Made visible again after the retry delay (failed outcome, or the store failed). */
  | 'retry-scheduled'
  /** Made visible again at once without handling (shutdown, or behind a failure of its FIFO group). */
  | 'released'
  /** Left to come back after its visibility timeout (a delete or dead-letter send failed). */
  | 'left-in-flight';

/** Reported through {@link SqsWorkerOptions.onSettled} once per received message. */
export interface SqsSettledEvent<R = unknown> {
  /** The message as SQS delivered it. */
  readonly message: Message;
  /** The inbox's outcome; `undefined` when the message was released unhandled or the store failed. */
  readonly outcome: InboxOutcome<R> | undefined;
  /** What the worker did with it. */
  readonly action: SqsWorkerAction;
  /** The error behind a `retry-scheduled` or `left-in-flight` action, if any. */
  readonly error?: Error;
}

/**
 * Options of {@link createSqsWorker}. Give `client` or `clientConfig` (see
 * {@link SqsClientSource}).
 */
export interface SqsWorkerOptions<R = unknown> extends SqsClientSource {
  /** URL of the queue to consume. */
  readonly queueUrl: string;
  /** An inbox (`createInbox(...)`), or the settings for one the worker creates at `start`. */
  readonly inbox: Inbox | SqsInboxSettings;
  /** Runs once per message id; its effects commit with the dedup record. */
  readonly handler: Handler<R>;
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
   * Backoff before a failed message is delivered again, applied with
   * `ChangeMessageVisibility` (rounded up to whole seconds, at most 12 hours). It is the
   * backoff of an inbox the worker creates; with your own inbox, that inbox's `backoff`
   * decides and this one applies only when the store itself fails. Default
   * `{ baseMs: 1 000, capMs: 300 000 }`.
   */
  readonly retry?: Pick<BackoffOptions, 'baseMs' | 'capMs'>;
  /**
   * Queue dead-lettered messages are sent to (then deleted from the source queue). Default:
   * the target of the queue's redrive policy when it has one; otherwise none, and the
   * store's dead letter is the only copy.
   */
  readonly deadLetterQueueUrl?: string;
  /** Where the message id comes from; see {@link SqsMessageIdOptions}. */
  readonly messageId?: SqsMessageIdOptions;
  /** Message attribute holding the scope (tenant) of a message. Default `tenant`. */
  readonly scopeAttribute?: string;
  /**
   * Decodes the body for `ctx.payload` (an inbox the worker creates only; give your own
   * inbox its own `decode`). A throw dead-letters the message as `UNDECODABLE_BODY`.
   */
  readonly decode?: (body: Uint8Array | string, envelope: Envelope) => unknown;
  /**
   * How long `stop` waits for running handlers before it aborts their `ctx.signal` and
   * returns; their messages come back after the visibility timeout. Default 30 000.
   */
  readonly shutdownTimeoutMs?: number;
  /** Called after the worker acted on each message; for metrics and tests. Must not throw. */
  readonly onSettled?: (event: SqsSettledEvent<R>) => void;
  /** Where log lines go. Default: a silent logger. */
  readonly logger?: Logger;
  /** OpenTelemetry meter. Default: the global provider's `@justonce/core` meter. */
  readonly meter?: SqsMeter;
  /**
   * Time limits of the worker's SQS calls; see {@link SqsTimeoutOptions}. Default
   * `{ connectMs: 5 000, requestMs: 10 000 }`: a `ReceiveMessage` may take `waitTimeSeconds`
   * plus 10 s, every other call 10 s.
   */
  readonly timeouts?: SqsTimeoutOptions;
}

/** What the worker learned about its queue at `start`. */
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
  /** The dead-letter queue the worker forwards to, if any. */
  readonly deadLetterQueueUrl: string | undefined;
}

/** Options of {@link SqsWorker.stop}. */
export interface SqsStopOptions {
  /** Overrides `shutdownTimeoutMs` for this call. */
  readonly timeoutMs?: number;
}

/** A running SQS consumer around an inbox. */
export interface SqsWorker {
  /**
   * Describes the queue, creates the inbox if the worker owns it, and starts polling.
   * Rejects with a typed error when the queue cannot be described or the configuration
   * does not fit the queue; rejects with `SqsStateError` when called twice.
   */
  start(): Promise<void>;
  /**
   * Stops receiving, releases messages not started yet, waits for running handlers (up to
   * the shutdown timeout), flushes pending deletes. Idempotent.
   */
  stop(options?: SqsStopOptions): Promise<void>;
  /** Whether `start` resolved and `stop` has not been called. */
  readonly running: boolean;
  /** Messages received and not yet settled. */
  readonly inFlight: number;
  /** What `start` learned about the queue; `undefined` before. */
  readonly queue: SqsQueueInfo | undefined;
}
