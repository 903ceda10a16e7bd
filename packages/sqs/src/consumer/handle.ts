import {
  decide,
  decideOnThrow,
  type Decision,
  type DecisionContext,
  type Envelope,
} from '@justonce/core/transport';
import { toEnvelope } from './envelope';
import { groupOf, roundsOf } from './fifo/groups';
import type { ConsumerRuntime, QueueSetup } from './runtime';
import { release, settle } from './settle';
import type { HeldMessage } from './visibility/held-message';
import { holdThrough } from './visibility/hold-through';

/** Where the decisions of this consumer's deliveries come from, for the dead-letter facts. */
function contextOf<R>(rt: ConsumerRuntime<R>, holds: number): DecisionContext {
  return {
    consumer: rt.options.inbox.consumer,
    source: rt.options.queueUrl,
    holds,
    holdBackoff: rt.holdBackoff,
  };
}

/** The envelope of `h`, noting its message id for `onSettled`. */
function envelopeOf(setup: QueueSetup, h: HeldMessage): Envelope {
  const envelope = toEnvelope(h.message, setup.envelopeSettings);
  h.messageId = envelope.id;
  return envelope;
}

/**
 * Handles one held message (message mode) and acts on the decision. Resolves whether the
 * message was held back (redelivered or released), which holds back its FIFO group's later
 * messages. Through a store outage the message stays in flight and is tried again
 * in-process; when the consumer stops meanwhile it is released. @internal
 */
export async function handleOne<R>(
  rt: ConsumerRuntime<R>,
  setup: QueueSetup,
  h: HeldMessage,
  behindHeldBack: boolean,
): Promise<boolean> {
  if (!rt.live || behindHeldBack) return release(rt, setup, h);
  for (let holds = 0; ; holds++) {
    if ((await rt.handlerSlots.take(1)) === 0) return release(rt, setup, h);
    let decision: Decision<R>;
    try {
      const { inbox, handler } = rt.options;
      const outcome = await inbox.process(envelopeOf(setup, h), handler, {
        signal: h.controller.signal,
        messaging: rt.messaging,
      });
      rt.storeOutage.recovered('sqs consumer: the store answers again; held messages go on');
      decision = decide(outcome, contextOf(rt, holds));
    } catch (error) {
      decision = decideOnThrow(error, contextOf(rt, holds));
    } finally {
      // Not held through a backoff: other messages may run meanwhile.
      rt.handlerSlots.give(1);
    }
    if (decision.kind === 'hold' && (await holdThrough(rt, setup, [h], decision))) continue;
    return settle(rt, setup, h, decision);
  }
}

/**
 * Handles one receive batch (batch mode) with `processBatch`, one transaction per round,
 * every round with the batch's `signal`. On a FIFO queue a group stays in order: a group
 * with a message held back has its later messages released. @internal
 */
export async function handleBatch<R>(
  rt: ConsumerRuntime<R>,
  setup: QueueSetup,
  batch: readonly HeldMessage[],
  signal: AbortSignal,
): Promise<void> {
  const blocked = new Set<string>();
  for (const round of roundsOf(setup.info.fifo, batch)) {
    const live: HeldMessage[] = [];
    const released: Promise<boolean>[] = [];
    for (const h of round) {
      if (!rt.live || (setup.info.fifo && blocked.has(groupOf(h)))) {
        released.push(release(rt, setup, h));
      } else {
        live.push(h);
      }
    }
    await Promise.all(released);
    if (live.length === 0) continue;
    const heldBack = await handleRound(rt, setup, live, signal);
    live.forEach((h, i) => {
      if (heldBack[i]) blocked.add(groupOf(h));
    });
  }
}

/**
 * Handles one round of a receive batch in one `processBatch` transaction and acts on each
 * decision; resolves, per message, whether it was held back. Through a store outage the
 * round stays in flight and is tried again, as in {@link handleOne}.
 */
async function handleRound<R>(
  rt: ConsumerRuntime<R>,
  setup: QueueSetup,
  live: readonly HeldMessage[],
  signal: AbortSignal,
): Promise<boolean[]> {
  for (let holds = 0; ; holds++) {
    if ((await rt.handlerSlots.take(live.length, live.length)) === 0) {
      return Promise.all(live.map((h) => release(rt, setup, h)));
    }
    let decisions: Decision<R>[];
    try {
      const envelopes = live.map((h) => envelopeOf(setup, h));
      const { inbox, handler } = rt.options;
      const outcomes = await inbox.processBatch(envelopes, handler, {
        signal,
        messaging: rt.messaging,
      });
      rt.storeOutage.recovered('sqs consumer: the store answers again; held messages go on');
      decisions = live.map((_, i) => {
        const outcome = outcomes[i];
        if (outcome !== undefined) return decide(outcome, contextOf(rt, holds));
        return decideOnThrow(new Error('processBatch returned no outcome'), contextOf(rt, holds));
      });
    } catch (error) {
      // One throw for the whole round: every message of it gets the same decision.
      const decision = decideOnThrow(error, contextOf(rt, holds));
      decisions = live.map(() => decision);
    } finally {
      rt.handlerSlots.give(live.length);
    }
    const first = decisions[0];
    if (first?.kind === 'hold' && decisions.every((d) => d === first)) {
      if (await holdThrough(rt, setup, live, first)) continue;
    }
    return Promise.all(live.map((h, i) => settle(rt, setup, h, decisions[i]!)));
  }
}
