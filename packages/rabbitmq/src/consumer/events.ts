import type { InboxOutcome } from '@justonce/core';

/** What the consumer did with a delivery once the inbox was done with it. */
export type SettleAction =
  /** Processed or duplicate: acknowledged. */
  | 'acked'
  /** Failed: a copy went to a retry queue (confirmed), then the delivery was acknowledged. */
  | 'retry-scheduled'
  /** Dead-lettered: a copy went to the dead-letter exchange (confirmed), then acknowledged. */
  | 'dead-lettered'
  /** The retry or dead-letter publish failed: the delivery was nacked back to the queue. */
  | 'requeued'
  /** The channel was gone before the acknowledgement; the broker redelivers the message. */
  | 'abandoned'
  /** Held while the store was unavailable when the consumer stopped: nacked back unprocessed. */
  | 'released';

/** Something the consumer did, for tests, metrics and dashboards. */
export type RabbitConsumerEvent =
  /** Consuming (again): `reconnect` is false the first time. */
  | { readonly type: 'connected'; readonly reconnect: boolean }
  /** The connection or channel was lost; reconnection follows unless stopping. */
  | { readonly type: 'disconnected'; readonly error: Error }
  /** A reconnection attempt failed; the next comes after `nextDelayMs`. */
  | {
      readonly type: 'reconnect-failed';
      readonly error: Error;
      readonly attempt: number;
      readonly nextDelayMs: number;
    }
  /**
   * The store was unavailable (the inbox threw `STORE_UNAVAILABLE`): the delivery is held
   * unacknowledged and processed again after `nextDelayMs`.
   */
  | {
      readonly type: 'held';
      readonly messageId: string | undefined;
      readonly error: Error;
      readonly attempt: number;
      readonly nextDelayMs: number;
    }
  /** A delivery was settled. */
  | {
      readonly type: 'settled';
      readonly messageId: string | undefined;
      readonly action: SettleAction;
      /** The inbox's outcome; absent when the inbox itself threw (store unreachable). */
      readonly outcome?: InboxOutcome;
      /** The retry delay chosen, for `retry-scheduled`. */
      readonly delayMs?: number;
      /** What went wrong, for `requeued`, `abandoned`, or an inbox that threw. */
      readonly error?: Error;
    };
