import type { KnexTransaction } from '@justonce/core';
import { consumerLifecycle } from '@justonce/core/transport';
import { handleDeliveries } from './handle';
import { resolveConsumerOptions, type RabbitConsumerOptions } from './options';
import { createRuntime } from './runtime';
import { startConsuming, stopConsuming } from './start-stop';
import type { RabbitConsumer } from './types';

/**
 * Consumes a RabbitMQ queue through the inbox: one effect per message id however often the
 * broker delivers it.
 *
 * Each delivery is acknowledged only after the inbox's transaction commits (processed) or
 * the inbox reports a duplicate. What happens next is core's `decide`: a failed attempt is
 * copied to a retry queue with a message TTL that dead-letters back into the queue
 * (confirmed before the original is acknowledged), so waiting never blocks the channel; a
 * message the inbox dead-letters (too many attempts, no id, undecodable body, …) is copied
 * to the dead-letter exchange with core's `x-justonce-*` dead-letter headers, then
 * acknowledged; a store outage holds the delivery unacknowledged. A lost connection or
 * channel is reopened with full-jitter backoff; unacknowledged deliveries come back from the
 * broker (those not started yet are reported `released`, as at a stop) and the inbox answers
 * the ones already committed as duplicates. With
 * `mode: 'batch'` the deliveries waiting together go through one `processBatch` transaction,
 * then each is settled as above.
 */
export function createRabbitConsumer<R = unknown, Tx = KnexTransaction>(
  options: RabbitConsumerOptions<R, Tx>,
): RabbitConsumer {
  // The consumer never touches the transaction: the inbox and the handler agree on Tx.
  const resolved = resolveConsumerOptions(options as unknown as RabbitConsumerOptions<R>);
  const rt = createRuntime(resolved, handleDeliveries);
  const lifecycle = consumerLifecycle(`createRabbitConsumer("${resolved.queue}")`, {
    start: () => startConsuming(rt),
    stop: (settings) => stopConsuming(rt, settings),
    inbox: resolved.inbox,
  });
  return {
    start: () => lifecycle.start(),
    stop: (stopOptions) => lifecycle.stop(stopOptions),
    get running() {
      return lifecycle.running;
    },
    get connected() {
      return rt.current !== undefined && !rt.current.session.lost;
    },
    topology() {
      return {
        queue: resolved.queue,
        deadLetterExchange: resolved.topology.deadLetterExchange,
        deadLetterQueue: resolved.topology.deadLetterQueue,
        retryQueues: [...rt.declaredRetryQueues].sort(),
      };
    },
  };
}
