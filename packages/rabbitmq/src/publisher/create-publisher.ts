import type { Publisher } from '@justonce/core/transport';
import { resolveLogger } from '@justonce/core/transport';
import { OutageLog } from '../outage/outage-log';
import { closePublisher, type PublisherRuntime } from './connection';
import { resolvePublisherOptions, type RabbitPublisherOptions } from './options';
import { publishBatch } from './publish';

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
  const resolved = resolvePublisherOptions(options);
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
    options: resolved,
    outage,
    current: undefined,
    opening: undefined,
    closing: undefined,
    failedAttempts: 0,
    nextAttemptAt: 0,
  };
  return {
    messagingSystem: 'rabbitmq',
    publish: (messages) => publishBatch(rt, messages),
    close: () => closePublisher(rt),
  };
}
