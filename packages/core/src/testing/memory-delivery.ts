import type { InboxOutcome } from '../inbox/types';
import type { Envelope } from '../transport/envelope';
import { MESSAGE_ID_HEADER } from '../transport/message-headers';
import {
  decide,
  decideOnThrow,
  deadLetterHeaders,
  findMessageId,
  type Decision,
  type SettledEvent,
} from '../consumer';
import { SimulatedCrashError, isSimulatedCrash } from './errors';
import type { CrashPoint } from './faults';
import type {
  BrokerRuntime,
  ConsumerState,
  Delivery,
  DeliveryRecord,
  ResolvedConsumeOptions,
  StoredMessage,
  Ticket,
} from './memory-broker-types';
import {
  addDuplicateCopies,
  enqueue,
  notifyIfIdle,
  pump,
  record,
  redeliverLater,
  safely,
} from './memory-queue';

type Settled = Omit<SettledEvent, 'message' | 'messageId'>;

/** The envelope of one delivery: the message id found by the shared rules, the facts. */
function envelopeOf(stored: StoredMessage, options: ResolvedConsumeOptions): Envelope {
  const { message } = stored;
  const headers: Record<string, string> = { ...message.headers };
  if (message.id !== undefined) headers[MESSAGE_ID_HEADER] = message.id;
  const id = findMessageId(
    message,
    headers,
    options.messageId,
    () => stored.brokerId,
    // No logger here: a throwing `extract` simply counts as no id, as findMessageId says.
    () => undefined,
  );
  const scope = message.scope ?? headers[options.scopeHeader];
  return {
    id,
    ...(scope === undefined ? {} : { scope }),
    ...(message.key === undefined || message.key === null ? {} : { key: message.key }),
    headers,
    body: message.body,
    delivery: {
      attempt: stored.receiveCount,
      receiveCount: stored.receiveCount,
      redelivered: stored.receiveCount > 1,
      source: stored.queue,
      receivedAt: new Date(),
    },
  };
}

/** Reports to the consumer's `onSettled`; its throw is surfaced, never the broker's problem. */
function emit(consumer: ConsumerState, delivery: Delivery, event: Settled): void {
  const hook = consumer.options.onSettled;
  if (hook === undefined) return;
  const full = {
    ...event,
    messageId: delivery.envelope.id,
    message: delivery.ticket.stored.message,
  };
  safely(() => hook(full));
}

/** Appends this delivery's line to the log. */
function log(
  rt: BrokerRuntime,
  consumer: ConsumerState,
  delivery: Delivery,
  entry: Omit<DeliveryRecord, 'sequence' | 'queue' | 'messageId' | 'receiveCount' | 'kind'>,
): void {
  record(rt, consumer.queue, {
    messageId: delivery.envelope.id,
    receiveCount: delivery.receiveCount,
    kind: delivery.ticket.kind,
    ...entry,
  });
}

/** The consumer "died": no acknowledgement; the message comes back like after a visibility timeout. */
function crash(
  rt: BrokerRuntime,
  consumer: ConsumerState,
  delivery: Delivery,
  error: Error,
  outcome?: InboxOutcome,
): void {
  const point: CrashPoint | undefined = isSimulatedCrash(error) ? error.point : undefined;
  const delayMs = rt.options.crashDelayMs;
  consumer.queue.counters.crashed += 1;
  log(rt, consumer, delivery, {
    result: 'crashed',
    acked: false,
    error,
    redeliveryDelayMs: delayMs,
    ...(point === undefined ? {} : { crashPoint: point }),
    ...(outcome === undefined ? {} : { outcome }),
  });
  redeliverLater(rt, consumer.queue, delivery.ticket.stored, delayMs);
  const action = point === 'after-commit-before-ack' ? 'abandoned' : 'released';
  emit(consumer, delivery, { action, error, ...(outcome === undefined ? {} : { outcome }) });
}

/** Acknowledges; the first acknowledgement of a message releases its planned duplicates. */
function ack(rt: BrokerRuntime, consumer: ConsumerState, delivery: Delivery): void {
  const { stored } = delivery.ticket;
  consumer.queue.counters.acked += 1;
  if (stored.acked) return;
  stored.acked = true;
  const id = stored.message.id;
  if (id !== undefined) addDuplicateCopies(rt, stored, rt.plan.takeDuplicates(id));
}

/** Acts on an `ack` or `dead-letter` decision, unless a crash before the ack is planned. */
function settle(
  rt: BrokerRuntime,
  consumer: ConsumerState,
  delivery: Delivery,
  decision: Extract<Decision, { kind: 'ack' | 'dead-letter' }>,
): void {
  const { queue } = consumer;
  const { outcome } = decision;
  const { message } = delivery.ticket.stored;
  if (rt.plan.takeCrash('after-commit-before-ack', message.id)) {
    const error = new SimulatedCrashError('after-commit-before-ack', message.id);
    crash(rt, consumer, delivery, error, outcome);
    return;
  }
  if (decision.kind === 'dead-letter') {
    queue.counters.deadLettered += 1;
    queue.deadLetters.push({
      queue: queue.name,
      // Forwarded as every transport forwards it: the original headers plus the shared facts.
      message: {
        ...message,
        headers: { ...message.headers, ...deadLetterHeaders(decision.facts) },
      },
      reason: decision.facts.reason,
      ...(outcome.status === 'dead-lettered' ? { error: outcome.error } : {}),
      deadLetterId: decision.facts.deadLetterId,
      facts: decision.facts,
      receiveCount: delivery.receiveCount,
    });
  } else if (outcome.status === 'processed') queue.counters.processed += 1;
  else queue.counters.duplicates += 1;
  ack(rt, consumer, delivery);
  log(rt, consumer, delivery, { result: outcome.status, acked: true, outcome });
  emit(
    consumer,
    delivery,
    decision.kind === 'ack'
      ? { action: 'acked', outcome }
      : { action: 'dead-lettered', outcome, deadLetter: decision.facts },
  );
}

/** Does what the shared decision says (a `hold` is the run loop's, see {@link runDelivery}). */
function act(
  rt: BrokerRuntime,
  consumer: ConsumerState,
  delivery: Delivery,
  decision: Decision,
): void {
  switch (decision.kind) {
    case 'ack':
    case 'dead-letter':
      settle(rt, consumer, delivery, decision);
      return;
    case 'redeliver': {
      const { outcome } = decision;
      const error = outcome.status === 'failed' ? outcome.error : undefined;
      // An injected crash at an inbox step surfaces as a failed outcome: it is still a crash.
      if (isSimulatedCrash(error)) return crash(rt, consumer, delivery, error, outcome);
      const delayMs = Math.min(decision.delayMs, rt.options.maxRetryDelayMs);
      consumer.queue.counters.failed += 1;
      log(rt, consumer, delivery, {
        result: 'failed',
        acked: false,
        outcome,
        ...(error === undefined ? {} : { error }),
        redeliveryDelayMs: delayMs,
      });
      redeliverLater(rt, consumer.queue, delivery.ticket.stored, delayMs);
      emit(consumer, delivery, { action: 'redelivered', outcome, delayMs });
      return;
    }
    case 'hold':
    case 'release':
      crash(rt, consumer, delivery, decision.error);
      return;
  }
}

/** Waits `ms`, or less when a stop wakes the delivery. */
function pause(delivery: Delivery, ms: number): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      delivery.wake = undefined;
      resolve();
    };
    const timer = setTimeout(done, ms);
    delivery.wake = done;
  });
}

/**
 * Runs one delivery to its decision. A store outage holds it in flight and tries again after
 * the hold's delay, uncharged, for as long as the consumer runs; a stop releases it.
 */
async function runDelivery(
  rt: BrokerRuntime,
  consumer: ConsumerState,
  delivery: Delivery,
): Promise<void> {
  const where = { consumer: consumer.options.name, source: consumer.queue.name };
  for (let holds = 0; ; holds += 1) {
    const result = await consumer.options.process(delivery.envelope, consumer.abort.signal).then(
      (outcome) => ({ outcome }),
      (thrown: unknown) => ({ thrown }),
    );
    // Given back by a stop meanwhile: another delivery owns the message now.
    if (delivery.released) return;
    if ('outcome' in result) return act(rt, consumer, delivery, decide(result.outcome, where));
    const decision = decideOnThrow(result.thrown, { ...where, holds });
    if (decision.kind !== 'hold' || consumer.stopped) return act(rt, consumer, delivery, decision);
    emit(consumer, delivery, { action: 'held', error: decision.error, delayMs: decision.delayMs });
    await pause(delivery, decision.delayMs);
    if (delivery.released) return;
    if (consumer.stopped)
      return act(rt, consumer, delivery, { kind: 'release', error: decision.error });
  }
}

/** Hands a ready copy to a consumer and runs it. @internal */
export function startDelivery(rt: BrokerRuntime, consumer: ConsumerState, ticket: Ticket): void {
  const { queue } = consumer;
  const { stored } = ticket;
  stored.receiveCount += 1;
  queue.counters.deliveries += 1;
  queue.inFlight += 1;
  const delivery: Delivery = {
    ticket,
    receiveCount: stored.receiveCount,
    envelope: envelopeOf(stored, consumer.options),
    released: false,
    wake: undefined,
  };
  const running = Promise.resolve()
    .then(() => runDelivery(rt, consumer, delivery))
    .catch((error: unknown) =>
      safely(() => {
        throw error;
      }),
    )
    .then(() => {
      queue.inFlight -= 1;
      consumer.running.delete(delivery);
      pump(rt, queue);
      notifyIfIdle(rt);
    });
  consumer.running.set(delivery, running);
}

/**
 * Gives a running delivery back unsettled (a stop without drain): the message is ready again
 * at once, and whatever the delivery's run decides later is ignored. @internal
 */
export function releaseDelivery(
  rt: BrokerRuntime,
  consumer: ConsumerState,
  delivery: Delivery,
  error: Error,
): void {
  if (delivery.released) return;
  delivery.released = true;
  delivery.wake?.();
  consumer.queue.counters.released += 1;
  log(rt, consumer, delivery, { result: 'released', acked: false, error });
  emit(consumer, delivery, { action: 'released', error });
  if (!rt.closed)
    enqueue(rt, consumer.queue, { stored: delivery.ticket.stored, kind: 'redelivery' });
}
