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
