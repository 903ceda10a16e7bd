import type { InboxOutcome } from '@justonce/core';
import {
  decide,
  decideOnThrow,
  type Decision,
  type DecisionContext,
  type Envelope,
  type MessagingSystem,
  errorMessage,
  sleep,
} from '@justonce/core/transport';
import { isCircuitOpenError } from '@justonce/core/retry';
import { messageIdOf, toEnvelope } from './envelope';
import { settled, type ConsumerRuntime, type Delivery } from './runtime';
import { release, releaseLater, releaseUnstarted, settle, type SettleDecision } from './settle';

/** A delivery on its way through the inbox, with its envelope. */
interface Pending {
  readonly d: Delivery;
  readonly envelope: Envelope;
}

/** A delivery and what to do with it. */
interface Decided<R> {
  readonly d: Delivery;
  readonly decision: SettleDecision<R>;
}

/**
 * Runs deliveries taken off the work queue together through the inbox — in message mode one
 * delivery with `inbox.process`, in batch mode up to `batchSize` in one
 * `inbox.processBatch` transaction — and carries out core's decision for each. @internal
 */
export async function handleDeliveries<R>(
  rt: ConsumerRuntime<R>,
  deliveries: readonly Delivery[],
): Promise<void> {
  // A lost channel's deliveries come back from the broker; released ones are back already.
  // The work queue may hand some over before the loss is seen there: they are reported here.
  releaseUnstarted(
    rt,
    deliveries.filter((d) => d.live.session.lost),
    new Error('the channel was lost before the delivery was started'),
  );
  const pending = deliveries
    .filter((d) => !d.live.session.lost && !d.released)
    .map((d) => ({ d, envelope: envelopeOf(rt, d) }));
  if (pending.length === 0) return;
  const decided = await decideHolding(rt, pending);
  // A throw of the inbox is one `release` decision for the whole batch: one backoff step.
  const released = decided.filter(({ decision }) => decision.kind === 'release');
  const others = decided.filter(({ decision }) => decision.kind !== 'release');
  const first = released[0]?.decision;
  await Promise.all([
    ...others.map(({ d, decision }) => settle(rt, d, d.messageId, decision)),
    first?.kind === 'release'
      ? releaseLater(
          rt,
          released.map(({ d }) => d),
          first.error,
        )
      : undefined,
  ]);
}

/** The envelope of `d`, noting its message id (for `onSettled` and a stop). */
function envelopeOf<R>(rt: ConsumerRuntime<R>, d: Delivery): Envelope {
  const { queue, messageId: idOptions, scopeHeader, logger } = rt.options;
  const messageId = messageIdOf(d.message, idOptions, (error) => {
    logger.warn('messageId.extract threw; treating the message as having no id', {
      queue,
      error: errorMessage(error),
    });
  });
  d.messageId = messageId;
  return toEnvelope(d.message, queue, messageId, scopeHeader);
}

/**
 * Runs the inbox and decides; while the decision is `hold` (the store is unavailable), keeps
 * the deliveries unacknowledged and runs them again after the decision's delay. Neither
 * nacked nor republished: each return to the queue sets `redelivered` (and raises a quorum
 * queue's delivery count), which the inbox counts as an attempt, so a long outage would
 * dead-letter good messages. A delivery drops out when the wait ended first: its channel was
 * lost (the broker redelivers), or the consumer is stopping (it is released to the queue).
 */
async function decideHolding<R>(
  rt: ConsumerRuntime<R>,
  pending: readonly Pending[],
): Promise<Decided<R>[]> {
  const { inbox, storeRetry, queue } = rt.options;
  const decided: Decided<R>[] = [];
  let batch = pending;
  for (let holds = 0; batch.length > 0; holds++) {
    const where = { consumer: inbox.consumer, source: queue, holdBackoff: storeRetry, holds };
    const decisions = await runInbox(rt, batch, where);
    // Only a throw of the inbox holds, and a throw is the whole batch's.
    const held: Pending[] = [];
    let hold: Extract<Decision<R>, { kind: 'hold' }> | undefined = undefined;
    for (const [i, p] of batch.entries()) {
      const decision = decisions[i]!;
      if (decision.kind !== 'hold') {
        decided.push({ d: p.d, decision });
      } else {
        held.push(p);
        hold ??= decision;
      }
    }
    if (hold === undefined) break;
    const { error, delayMs } = hold;
    // An open breaker is logged once per open by the resilience layer, not as a store outage.
    if (!isCircuitOpenError(error)) rt.storeOutage.begin(error, idsOf(held));
    for (const { d } of held) settled(rt, d, d.messageId, 'held', { error, delayMs });
    await sleep(delayMs, rt.stopping.signal, ...signalsOf(held));
    batch = held.filter(({ d }) => !d.live.session.lost && !d.released);
    if (rt.stopping.signal.aborted) {
      for (const { d } of batch) release(rt, d, d.messageId, { error });
      break;
    }
  }
  return decided;
}

/** The broker, for the inbox's `process` spans; the destination is each delivery's queue. */
const RABBITMQ: MessagingSystem = { system: 'rabbitmq' };

/**
 * One inbox call for `batch`, a decision per delivery: `process` in message mode,
 * `processBatch` in batch mode. A throw is one decision for the whole batch.
 */
async function runInbox<R>(
  rt: ConsumerRuntime<R>,
  batch: readonly Pending[],
  where: DecisionContext,
): Promise<Decision<R>[]> {
  const { inbox, handler, mode } = rt.options;
  const signals = signalsOf(batch);
  const signal = signals.length === 1 ? signals[0]! : AbortSignal.any(signals);
  let outcomes: readonly (InboxOutcome<R> | undefined)[];
  try {
    outcomes =
      mode === 'batch'
        ? await inbox.processBatch(
            batch.map((p) => p.envelope),
            handler,
            { signal, messaging: RABBITMQ },
          )
        : [await inbox.process(batch[0]!.envelope, handler, { signal, messaging: RABBITMQ })];
  } catch (error) {
    const decision = decideOnThrow(error, where);
    return batch.map(() => decision);
  }
  rt.storeOutage.end();
  rt.inboxThrows = 0;
  return batch.map((_, i) => {
    const outcome = outcomes[i];
    if (outcome !== undefined) return decide(outcome, where);
    return decideOnThrow(new Error('processBatch returned no outcome'), where);
  });
}

/** The abort signals of the channels the deliveries came on (`ctx.signal`), each once. */
function signalsOf(batch: readonly Pending[]): AbortSignal[] {
  return [...new Set(batch.map(({ d }) => d.live.abort.signal))];
}

/** The message ids of `batch`, for the outage log. */
function idsOf(batch: readonly Pending[]): Record<string, unknown> {
  if (batch.length === 1) return { messageId: batch[0]!.d.messageId };
  return { messageIds: batch.map(({ d }) => d.messageId) };
}
