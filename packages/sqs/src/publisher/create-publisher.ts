import { ConfigurationError } from '@justonce/core';
import type { Publisher } from '@justonce/core/transport';
import { resolveClient } from '../client/client';
import { OutageNotice } from '../client/outage-notice';
import { resolvePublisherOptions } from './options';
import { publish } from './publish';
import type { PublisherRuntime } from './runtime';
import type { SqsPublisherOptions } from './types';

/**
 * Creates the relay's SQS publisher: a core {@link Publisher} that sends with
 * `SendMessageBatch` in requests of up to ten messages.
 *
 * - `destination` is a queue URL (`https://sqs.<region>.amazonaws.com/<account>/<name>`,
 *   used as is) or a queue name (looked up once with `GetQueueUrl`, then cached). Anything
 *   else fails that message with {@link SqsInvalidMessageError}.
 * - Headers travel as String message attributes, `message-id` = the message id among them;
 *   more than SQS's 10 fails the message with {@link SqsTooManyAttributesError}.
 * - FIFO queues (name ending `.fifo`): `MessageGroupId` = partition key (the message id when
 *   there is none), `MessageDeduplicationId` = message id (either is replaced by its SHA-256
 *   when SQS would refuse it as is).
 * - A message over `maxMessageBytes` fails with {@link SqsMessageTooLargeError}.
 * - Entries SQS reports as failed are sent again (up to `maxAttempts`); a later message of
 *   the same key is held back behind a message of its key that failed.
 * - A request that fails for the network's or the service's sake (timed out after
 *   `timeouts.requestMs`, connection lost, throttled, server fault, the queue missing) is an
 *   outage: its messages are reported with `outage: true`, so the relay retries them and
 *   never charges them. After a timeout, a missing queue or a queue-name lookup that failed
 *   so, nothing more of the call is sent.
 *
 * `close` destroys the client only when the publisher created it from `clientConfig`.
 */
export function createSqsPublisher(options: SqsPublisherOptions): Publisher {
  if (typeof options !== 'object' || options === null) {
    throw new ConfigurationError('createSqsPublisher needs options');
  }
  const settings = resolvePublisherOptions(options);
  const { client, owned } = resolveClient(options, 'createSqsPublisher', settings.timeouts);
  const { logger } = settings;
  const rt: PublisherRuntime = {
    settings,
    client,
    owned,
    logger,
    outage: new OutageNotice(logger, { limitMs: settings.timeouts.requestMs }),
    urls: new Map(),
    closed: false,
  };
  return {
    messagingSystem: 'aws_sqs',
    publish: (messages) => publish(rt, messages),
    async close(): Promise<void> {
      if (rt.closed) return;
      rt.closed = true;
      if (rt.owned) rt.client.destroy();
    },
  };
}
