import { decide, decideOnThrow, type Decision, type Envelope } from '@justonce/core';
import { describe } from '../amqp/connection';
import { messageIdOf, toEnvelope } from './envelope';
import { settled, sleep, type ConsumerRuntime, type Delivery } from './runtime';
import { release, settle } from './settle';

/** Runs one delivery through the inbox and carries out core's decision. @internal */
export async function handleDelivery<R>(rt: ConsumerRuntime<R>, d: Delivery): Promise<void> {
  if (d.live.session.lost || d.released) return;
  const { queue, messageId: idOptions, scopeHeader, logger } = rt.options;
  const messageId = messageIdOf(d.message, idOptions, (error) => {
    logger.warn('messageId.extract threw; treating the message as having no id', {
      queue,
      error: describe(error),
    });
  });
  d.messageId = messageId;
  const envelope = toEnvelope(d.message, queue, messageId, scopeHeader);
  const decision = await decideHolding(rt, d, envelope, messageId);
  if (decision !== undefined) await settle(rt, d, messageId, decision);
}

/**
 * Runs the inbox and decides; while the decision is `hold` (the store is unavailable), keeps
 * the delivery unacknowledged and runs it again after the decision's delay. Neither nacked
 * nor republished: each return to the queue sets `redelivered` (and raises a quorum queue's
 * delivery count), which the inbox counts as an attempt, so a long outage would dead-letter
 * good messages. `undefined` when the wait ended first: the channel was lost (the broker
 * redelivers), or the consumer is stopping (the delivery is released to the queue).
 */
async function decideHolding<R>(
  rt: ConsumerRuntime<R>,
  d: Delivery,
  envelope: Envelope,
  messageId: string | undefined,
): Promise<Exclude<Decision<R>, { kind: 'hold' }> | undefined> {
  const { inbox, handler, storeRetry, queue } = rt.options;
  const where = { consumer: inbox.consumer, source: queue, holdBackoff: storeRetry };
  for (let holds = 0; ; holds++) {
    let decision: Decision<R>;
    try {
      const outcome = await inbox.process(envelope, handler, { signal: d.live.abort.signal });
      rt.storeOutage.end();
      rt.inboxThrows = 0;
      decision = decide(outcome, where);
    } catch (error) {
      decision = decideOnThrow(error, { ...where, holds });
    }
    if (decision.kind !== 'hold') return decision;
    rt.storeOutage.begin(decision.error, { messageId });
    settled(rt, d, messageId, 'held', { error: decision.error, delayMs: decision.delayMs });
    await sleep(decision.delayMs, rt.stopping.signal, d.live.abort.signal);
    if (d.live.session.lost || d.released) return undefined;
    if (rt.stopping.signal.aborted) {
      release(rt, d, messageId, { error: decision.error });
      return undefined;
    }
  }
}
