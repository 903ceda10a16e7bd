import { ConfigurationError, type Logger } from '@justonce/core';
import { optionKeys, rejectUnknownOptions, positiveIntegerOption } from '@justonce/core/transport';
import {
  CONNECTION_KEYS,
  resolveConnection,
  type ConnectionOptions,
  type ConnectionSettings,
} from '../client/connection';
import type { RabbitBackoffOptions } from '../consumer/options';
import { backoffOption } from '../outage/backoff-option';

/** Options of {@link createRabbitPublisher}: `url` or `connect`, plus the ones below. */
export interface RabbitPublisherOptions extends ConnectionOptions {
  /**
   * How long to wait for the broker's confirm of each message. Default 15 000 ms. When it
   * fires the connection is presumed dead (a half-open connection never confirms): it is
   * destroyed, every message still waiting fails as an outage (`RabbitConnectionError`,
   * `outage: true`, never charged to the message), and the next publish reconnects.
   */
  readonly confirmTimeoutMs?: number;
  /** Publish with delivery mode 2 (persistent). Default true. */
  readonly persistent?: boolean;
  /**
   * How long a checked exchange is trusted to exist before it is checked again, in ms.
   * Default 60 000. Publishing to a missing exchange would close the channel for every
   * message in flight, so each exchange is checked on a throwaway channel first.
   */
  readonly exchangeCheckTtlMs?: number;
  /**
   * Backoff between connection attempts once the connection is lost or cannot be opened
   * (defaults 100 / 5 000 ms): a `publish` before the next attempt is due fails at once as
   * an outage instead of waiting for another connect timeout.
   */
  readonly reconnect?: RabbitBackoffOptions;
  /** Where connection problems are logged. Default: silent. */
  readonly logger?: Logger;
}

/** The publisher's options, checked, with the defaults applied. @internal */
export interface ResolvedPublisherOptions {
  readonly connection: ConnectionSettings;
  readonly confirmTimeoutMs: number;
  readonly reconnect: { readonly baseMs: number; readonly capMs: number };
  readonly exchangeCheckTtlMs: number;
  readonly persistent: boolean;
}

const PUBLISHER_KEYS = optionKeys<RabbitPublisherOptions>()([
  ...CONNECTION_KEYS,
  'confirmTimeoutMs',
  'persistent',
  'exchangeCheckTtlMs',
  'reconnect',
  'logger',
]);
const BACKOFF_KEYS = optionKeys<RabbitBackoffOptions>()(['baseMs', 'capMs']);

/**
 * The publisher's options, checked (unknown keys refused), with their defaults filled in.
 * @internal
 */
export function resolvePublisherOptions(options: RabbitPublisherOptions): ResolvedPublisherOptions {
  rejectUnknownOptions(options, PUBLISHER_KEYS, 'createRabbitPublisher');
  rejectUnknownOptions(options.reconnect, BACKOFF_KEYS, 'createRabbitPublisher', 'reconnect');
  const connection = resolveConnection(options, 'createRabbitPublisher', 'justonce-publisher');
  const confirmTimeoutMs = positiveIntegerOption(
    options.confirmTimeoutMs,
    'confirmTimeoutMs',
    15_000,
  );
  const reconnect = backoffOption(options.reconnect, 'reconnect', { baseMs: 100, capMs: 5_000 });
  const exchangeCheckTtlMs = positiveIntegerOption(
    options.exchangeCheckTtlMs,
    'exchangeCheckTtlMs',
    60_000,
  );
  const persistent = options.persistent ?? true;
  if (typeof persistent !== 'boolean') {
    throw new ConfigurationError('createRabbitPublisher: persistent must be a boolean');
  }
  return { connection, confirmTimeoutMs, reconnect, exchangeCheckTtlMs, persistent };
}
