import { ConfigurationError, type Logger } from '@justonce/core';
import {
  optionKeys,
  rejectUnknownOptions,
  resolveLogger,
  type Publisher,
  positiveIntegerOption,
} from '@justonce/core/transport';
import { CONNECTION_KEYS, resolveConnection, type ConnectionOptions } from '../amqp/connection';
import type { RabbitBackoffOptions } from '../consumer/options';
import { backoffOption } from '../options';
import { OutageLog } from '../outage-log';
import { closePublisher, type PublisherRuntime } from './connection';
import { publishBatch } from './publish';

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
 * A {@link Publisher} for the outbox relay that publishes to RabbitMQ on a confirm channel.
 *
 * - Each outbox `destination` is read by {@link parseDestination}: `queue` through the
 *   default exchange, or `exchange/routingKey`.
 * - Every message is published `mandatory`; a message the broker returns as unroutable is
 *   reported failed (retriable) so it stays in the outbox, never silently dropped.
 * - `publish` resolves when every message is confirmed or known to have failed; it never
 *   throws for a message's failure. Messages go out in the order given on one channel.
 *   A message that fails before it is sent (bad destination, missing exchange) holds back
 *   the later messages of its key in the same call.
 * - The message id travels as `properties.messageId` and the `message-id` header; the
 *   `correlation-id` header also as `properties.correlationId`, `content-type` as
 *   `properties.contentType`; the partition key as the `partition-key` header; every
 *   header as an AMQP header.
 * - The connection opens on the first publish and reopens on a later publish after a loss,
 *   attempts spaced by a capped jittered backoff. Every broker call has a time limit
 *   (connect, confirm, heartbeat, exchange check); a loss is logged once, and so is the
 *   recovery. `close` is idempotent.
 */
export function createRabbitPublisher(options: RabbitPublisherOptions): Publisher {
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
  const logger = resolveLogger(options.logger);
  const outage = new OutageLog(
    logger,
    {
      down: 'rabbitmq publisher lost its channel; reconnecting',
      up: 'rabbitmq publisher reconnected',
    },
    {},
  );

  const rt: PublisherRuntime = {
    options: { connection, confirmTimeoutMs, reconnect, exchangeCheckTtlMs, persistent },
    outage,
    current: undefined,
    opening: undefined,
    closing: undefined,
    failedAttempts: 0,
    nextAttemptAt: 0,
  };
  return {
    publish: (messages) => publishBatch(rt, messages),
    close: () => closePublisher(rt),
  };
}
