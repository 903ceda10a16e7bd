import type { Consumer, ConsumerStopOptions } from '@justonce/core/transport';
import type { RabbitTopology } from './topology/declare';

/** A RabbitMQ consumer with an inbox: the shared {@link Consumer} lifecycle, plus broker facts. */
export interface RabbitConsumer extends Consumer {
  /**
   * Connects, declares the topology, and starts consuming. Rejects when the first
   * connection or the topology fails (a {@link RabbitConnectionError} or
   * {@link RabbitTopologyError}), leaving the consumer stopped; after that, lost connections
   * are reopened automatically. A second call, or one after `stop`, rejects with
   * `ConsumerStateError` (`CONSUMER_STATE`).
   */
  start(): Promise<void>;
  /**
   * Stops taking deliveries and returns the ones not started to the queue (`released`). With
   * `drain` (default) waits for running handlers (at most `timeoutMs`, default 30 000), then
   * gives back what still runs; with `drain: false` gives running deliveries back at once.
   * Then closes the connection. Idempotent; a stopped consumer cannot be started again.
   */
  stop(options?: ConsumerStopOptions): Promise<void>;
  /** True while a channel is open and consuming. */
  readonly connected: boolean;
  /** The queues and exchanges this consumer uses. */
  topology(): RabbitTopology;
}

/**
 * What happened to the consumer's connection, for tests, metrics and dashboards. What
 * happened to each delivery goes to `onSettled` instead (the shared `SettledEvent`).
 */
export type RabbitConnectionEvent =
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
    };
