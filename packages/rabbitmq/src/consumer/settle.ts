import type { InboxOutcome } from '@justonce/core';
import {
  type Decision,
  type DeadLetterFacts,
  asError,
  errorMessage,
  errorText,
  sleep,
} from '@justonce/core/transport';
import { fullJitterBackoff } from '@justonce/core/retry';
import { forwardDeadLetter } from './dead-letter';
import { messageIdOf, RETRY_ATTEMPT_HEADER } from './envelope';
import { republished } from './republish';
import { settled, type ConsumerRuntime, type Delivery, type Live } from './runtime';
import { declareRetryQueue } from './topology/declare';

/**
 * The headers a consumer adds to a message it sends to a retry queue (dead letters carry
 * core's `DEAD_LETTER_HEADERS` instead).
 */
export const RETRY_HEADERS = {
  attempt: RETRY_ATTEMPT_HEADER,
  delayMs: 'x-justonce-retry-delay-ms',
  lastError: 'x-justonce-last-error',
} as const;

/** A decision other than `hold`, which the delivery loop carries out itself. @internal */
export type SettleDecision<R> = Exclude<Decision<R>, { kind: 'hold' }>;

/**
 * Carries out the decision core's `decide` / `decideOnThrow` made for a delivery:
 * `ack` acknowledges; `redeliver` copies it to the retry queue of its delay, then
 * acknowledges; `dead-letter` copies it to the dead-letter exchange with the shared facts,
 * then acknowledges; `release` nacks it back to the queue after a growing delay. @internal
 */
export async function settle<R>(
  rt: ConsumerRuntime<R>,
  d: Delivery,
  messageId: string | undefined,
  decision: SettleDecision<R>,
): Promise<void> {
  // A stop without drain gave it back already: any ack or nack now would close the channel.
  if (d.released) return;
  switch (decision.kind) {
    case 'ack':
      if (ack(rt, d, messageId, decision.outcome)) {
        settled(rt, d, messageId, 'acked', { outcome: decision.outcome });
      }
      return;
    case 'redeliver': {
      const { outcome } = decision;
      const attempt = outcome.status === 'failed' ? outcome.attempt : 1;
      const delayMs = rt.options.delays.delayFor(attempt, decision.delayMs);
      const cause = outcome.status === 'failed' ? outcome.error : new Error('failed');
      await redeliver(rt, d, messageId, { attempt, delayMs, cause, outcome });
      return;
    }
    case 'dead-letter':
      await deadLetter(rt, d, decision.outcome, decision.facts);
      return;
    case 'release':
      await releaseLater(rt, [d], decision.error);
      return;
  }
}

/**
 * The `release` decision (the inbox threw, not for a store outage: a broken hook, a bug, an
 * error of the database that is not an outage): the deliveries go back to the queue, but
 * only after a jittered delay that grows while the inbox keeps throwing (the `storeRetry`
 * backoff). An immediate nack puts them back at the head of the queue and brings them straight
 * back: a hot loop on the broker, the store and the log for as long as the cause lasts, and
 * on a quorum queue each return raises a delivery count, so the broker's delivery limit
 * (20 by default since RabbitMQ 4.0) would drop the message. One throw is one step of the
 * backoff and one log line, whether it failed one delivery or a whole batch. A stop or a lost
 * channel ends the wait early. @internal
 */
export async function releaseLater<R>(
  rt: ConsumerRuntime<R>,
  deliveries: readonly Delivery[],
  error: Error,
): Promise<void> {
  rt.inboxThrows += 1;
  const delayMs = fullJitterBackoff(rt.inboxThrows, rt.options.storeRetry);
  const ids = deliveries.map((d) => d.messageId);
  rt.options.logger.error('inbox failed; returning the message to the queue', {
    queue: rt.options.queue,
    ...(ids.length === 1 ? { messageId: ids[0] } : { messageIds: ids }),
    error: error.message,
    delayMs,
  });
  const channels = new Set(deliveries.map((d) => d.live.abort.signal));
  await sleep(delayMs, rt.stopping.signal, ...channels);
  for (const d of deliveries) {
    // Given back by a stop without drain meanwhile: a second nack would close the channel.
    // A lost channel is reported `abandoned` by `release`: the broker requeues it itself.
    if (!d.released) release(rt, d, d.messageId, { error });
  }
}

/**
 * Nacks a delivery back to the queue (`released`), or reports it `abandoned` when its channel
 * is gone (the broker requeues it by itself). @internal
 */
export function release<R>(
  rt: ConsumerRuntime<R>,
  d: Delivery,
  messageId: string | undefined,
  extra: { error?: Error; outcome?: InboxOutcome<R> } = {},
): void {
  try {
    if (d.live.session.lost) throw new Error('the channel is closed');
    d.live.session.channel.nack(d.message, false, true);
    d.released = true;
    settled(rt, d, messageId, 'released', extra);
  } catch (error) {
    settled(rt, d, messageId, 'abandoned', { ...extra, error: extra.error ?? asError(error) });
  }
}

/**
 * Gives back deliveries the inbox never saw (at a stop, or on a lost channel) and reports each
 * `released`, as every transport does: nacked to the queue while their channel lives, else
 * requeued by the broker itself when it closed the channel. Each is given back once. @internal
 */
export function releaseUnstarted<R>(
  rt: ConsumerRuntime<R>,
  deliveries: readonly Delivery[],
  error: Error,
): void {
  for (const d of deliveries) {
    if (d.released) continue;
    // For the event only: a throwing `extract` is logged when the message is handled again.
    d.messageId ??= messageIdOf(d.message, rt.options.messageId, () => undefined);
    try {
      if (!d.live.session.lost) d.live.session.channel.nack(d.message, false, true);
    } catch {
      // The channel closed meanwhile; the broker requeues the message by itself.
    }
    d.released = true;
    settled(rt, d, d.messageId, 'released', { error });
  }
}

/** Acknowledges on the delivery's own channel; false (and reported) when it is gone. */
function ack<R>(
  rt: ConsumerRuntime<R>,
  d: Delivery,
  messageId: string | undefined,
  outcome: InboxOutcome<R>,
): boolean {
  // Released by a stop while the copy was being published: the broker has it back already.
  if (d.released) return false;
  try {
    if (d.live.session.lost) throw new Error('the channel is closed');
    d.live.session.channel.ack(d.message);
    return true;
  } catch (error) {
    settled(rt, d, messageId, 'abandoned', { error: asError(error), outcome });
    return false;
  }
}

function retryQueue<R>(rt: ConsumerRuntime<R>, live: Live, delayMs: number): Promise<string> {
  let declared = live.retryQueues.get(delayMs);
  if (!declared) {
    declared = live.session
      .bounded(
        `declaring the retry queue of ${delayMs} ms`,
        declareRetryQueue(live.session.channel, rt.options.topology, delayMs),
      )
      .then((name) => {
        rt.declaredRetryQueues.add(name);
        return name;
      });
    declared.catch(() => live.retryQueues.delete(delayMs));
    live.retryQueues.set(delayMs, declared);
  }
  return declared;
}

/**
 * The `redeliver` decision: a copy to the retry queue of `delayMs` (its TTL dead-letters it
 * back into the queue), confirmed before the original is acknowledged, so waiting never
 * blocks the channel. When the copy cannot be published, the original is released.
 */
async function redeliver<R>(
  rt: ConsumerRuntime<R>,
  d: Delivery,
  messageId: string | undefined,
  retry: { attempt: number; delayMs: number; cause: Error; outcome: InboxOutcome<R> },
): Promise<void> {
  const { attempt, delayMs, cause, outcome } = retry;
  try {
    const name = await retryQueue(rt, d.live, delayMs);
    await d.live.publisher.writable();
    await d.live.publisher.publish(
      '',
      name,
      d.message.content,
      republished(d.message, {
        [RETRY_HEADERS.attempt]: attempt,
        [RETRY_HEADERS.delayMs]: delayMs,
        [RETRY_HEADERS.lastError]: errorText(cause.message),
      }),
    );
  } catch (error) {
    rt.options.logger.warn('cannot schedule a retry; returning the message to the queue', {
      queue: rt.options.queue,
      messageId,
      error: errorMessage(error),
    });
    if (!d.released) release(rt, d, messageId, { error: asError(error), outcome });
    return;
  }
  if (ack(rt, d, messageId, outcome)) {
    settled(rt, d, messageId, 'redelivered', { delayMs, error: cause, outcome });
  }
}

/**
 * The `dead-letter` decision: the copy forwarded to the dead-letter exchange
 * ({@link forwardDeadLetter}), then the ack. When the copy cannot be published, a retry.
 */
async function deadLetter<R>(
  rt: ConsumerRuntime<R>,
  d: Delivery,
  outcome: InboxOutcome<R>,
  facts: DeadLetterFacts,
): Promise<void> {
  const { logger, queue, topology, delays } = rt.options;
  logger.warn('message dead-lettered', {
    queue,
    messageId: facts.messageId,
    reason: facts.reason,
    attempt: facts.attempts,
    error: facts.error,
  });
  try {
    await forwardDeadLetter(rt, d, facts);
  } catch (error) {
    // The store holds the dead letter; the broker copy failed (no binding, channel gone).
    // Try again later rather than acknowledge a message nobody received.
    logger.error('cannot publish to the dead-letter exchange', {
      queue,
      exchange: topology.deadLetterExchange,
      messageId: facts.messageId,
      error: errorMessage(error),
    });
    const attempt = Math.max(1, facts.attempts);
    await redeliver(rt, d, facts.messageId, {
      attempt,
      delayMs: delays.delayFor(attempt, 1_000),
      cause: asError(error),
      outcome,
    });
    return;
  }
  if (ack(rt, d, facts.messageId, outcome)) {
    settled(rt, d, facts.messageId, 'dead-lettered', { outcome, deadLetter: facts });
  }
}
