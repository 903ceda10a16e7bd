import type { BackoffOptions, Logger } from '@justonce/core';
import type { SqsClientSource } from '../client/client';
import type { BodyEncoding } from '../client/body';
import type { SqsTimeoutOptions } from '../client/time-limits';

/**
 * Options of {@link createSqsPublisher}. Give `client` or `clientConfig` (see
 * {@link SqsClientSource}).
 */
export interface SqsPublisherOptions extends SqsClientSource {
  /**
   * Largest message SQS accepts, in bytes, counting the body and every attribute's name,
   * type and value; also the largest `SendMessageBatch` request. Default 262 144 (256 KiB,
   * the classic limit that every SQS-compatible service accepts). Amazon SQS accepts up to
   * 1 048 576 since 2025; raise it when your queues are on AWS.
   */
  readonly maxMessageBytes?: number;
  /** How payload bytes become the text body; see {@link BodyEncoding}. Default `utf8`. */
  readonly bodyEncoding?: BodyEncoding;
  /**
   * Attempts per message inside one `publish` call: entries SQS reports as failed (not by
   * the sender's fault) and requests that fail as a whole (network, throttling, server
   * errors) are sent again until this many attempts were made. Default 3. The relay retries
   * whatever still failed in a later cycle.
   */
  readonly maxAttempts?: number;
  /** Full-jitter backoff between those attempts. Default `{ baseMs: 50, capMs: 1 000 }`. */
  readonly backoff?: Pick<BackoffOptions, 'baseMs' | 'capMs'>;
  /**
   * `SendMessageBatch` requests in flight at once within one `publish` call. A batch that
   * holds a partition key of an earlier batch to the same queue waits for it, so per-key
   * order holds. Default 4.
   */
  readonly concurrency?: number;
  /** Where log lines go. Default: a silent logger. */
  readonly logger?: Logger;
  /**
   * Time limits of the publisher's SQS calls; see {@link SqsTimeoutOptions}. Default
   * `{ connectMs: 5 000, requestMs: 10 000 }`. A request that times out is not sent again
   * within the call: its messages, and those of the call not sent yet, fail as an outage
   * (the relay retries them later and never charges them), so a `publish` call ends within
   * about one `requestMs`.
   */
  readonly timeouts?: SqsTimeoutOptions;
}
