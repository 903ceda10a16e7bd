/** One message the relay asks a transport to publish. */
export interface OutgoingMessage {
  /** Stable id downstream inboxes dedupe on; the same on every re-publish. */
  readonly messageId: string;
  /** Topic, queue URL or name, or exchange (with routing key as the transport defines). */
  readonly destination: string;
  /** Partition key; the relay publishes messages of one key in order. */
  readonly key: string | null;
  /** Headers to carry: `causation-id`, `correlation-id`, `traceparent`, `tenant`, … */
  readonly headers: Readonly<Record<string, string>>;
  /** The body bytes. */
  readonly payload: Uint8Array;
}

/** The outcome of publishing one {@link OutgoingMessage}. */
export type PublishResult =
  | { readonly messageId: string; readonly ok: true }
  | {
      readonly messageId: string;
      readonly ok: false;
      /** Why it failed. */
      readonly error: Error;
      /** False when publishing it again cannot succeed (too large, unroutable for good, …). */
      readonly retriable: boolean;
      /**
       * True when the failure is the broker's or the network's, not the message's (the
       * connection is down, a request timed out, the client's state broke): the relay retries
       * it with backoff for as long as that lasts and never counts it toward `maxAttempts`.
       */
      readonly outage?: boolean;
    };

/**
 * What the relay needs from a transport.
 *
 * Contract:
 * - `publish` resolves only when each message is confirmed by the broker with its strongest
 *   confirmation, or known to have failed; it returns one result per input message, in the
 *   input order, and does not throw for per-message failures.
 * - Messages of the same `key` in one call must reach the broker in the order given.
 * - A batch is not atomic: some messages may succeed while others fail.
 * - `close` is idempotent.
 */
export interface Publisher {
  /**
   * The broker's `messaging.system` (`kafka`, `aws_sqs`, `rabbitmq`, …) for the relay's
   * `send` spans (docs/observability.md). Optional: a publisher without it sends unnamed.
   */
  readonly messagingSystem?: string;
  publish(messages: readonly OutgoingMessage[]): Promise<PublishResult[]>;
  close(): Promise<void>;
}
