import { deadLetterHeaders, type DeadLetterFacts } from '@justonce/core/transport';
import { republished } from './republish';
import type { ConsumerRuntime, Delivery } from './runtime';

/**
 * Forwards a dead letter: a copy of the delivery to the dead-letter exchange (routing key =
 * the queue) with the original headers plus core's dead-letter headers, on the delivery's
 * own channel, resolved once the broker confirms it. Throws when the copy cannot be
 * published (no binding, channel gone); acknowledging the original is the caller's. @internal
 */
export async function forwardDeadLetter<R>(
  rt: ConsumerRuntime<R>,
  d: Delivery,
  facts: DeadLetterFacts,
): Promise<void> {
  const { queue, topology } = rt.options;
  await d.live.publisher.writable();
  await d.live.publisher.publish(
    topology.deadLetterExchange,
    queue,
    d.message.content,
    republished(d.message, deadLetterHeaders(facts)),
  );
}
