import { messageHeaders } from '../transport/message-headers';
import type { OutgoingMessage, Publisher, PublishResult } from '../transport/publisher';
import { BrokerClosedError, IdleTimeoutError, SimulatedCrashError } from './errors';
import { FaultPlan, checkCount, type FaultInjector } from './faults';
import { checkDelay, MEMORY_SYSTEM, resolveBrokerOptions } from './memory-broker-options';
import type {
  BrokerRuntime,
  MemoryBroker,
  MemoryBrokerOptions,
  WhenIdleOptions,
} from './memory-broker-types';
import { createMemoryConsumer } from './memory-consumer';
import { startDelivery } from './memory-delivery';
import { addDuplicateCopies, isIdle, notifyIfIdle, send, stats } from './memory-queue';
import { seededRandom } from './random';

export type {
  BrokerStats,
  ConsumeOptions,
  ConsumeSettings,
  DeadLetteredMessage,
  DeliveryKind,
  DeliveryProcessor,
  DeliveryRecord,
  DeliveryResult,
  MemoryBroker,
  MemoryBrokerOptions,
  MemoryConsumer,
  MemoryMessage,
  WhenIdleOptions,
} from './memory-broker-types';
export { rejectUnknownBrokerOptions } from './memory-broker-options';

/** A {@link Publisher} into the broker: `destination` is the queue name. */
function brokerPublisher(rt: BrokerRuntime): Publisher {
  let publisherClosed = false;
  return {
    messagingSystem: MEMORY_SYSTEM,
    async publish(messages: readonly OutgoingMessage[]): Promise<PublishResult[]> {
      if (publisherClosed) throw new BrokerClosedError('publish on a closed publisher');
      // Refused even for an empty call, which would not reach `send`'s own check.
      if (rt.closed) throw new BrokerClosedError('publish');
      const results: PublishResult[] = [];
      for (const m of messages) {
        send(rt, m.destination, {
          id: m.messageId,
          body: m.payload,
          headers: messageHeaders(m),
          key: m.key,
        });
        results.push({ messageId: m.messageId, ok: true });
      }
      return results;
    },
    async close() {
      publisherClosed = true;
    },
  };
}

/** Explicit faults by message id. */
function faultInjector(rt: BrokerRuntime): FaultInjector {
  return {
    duplicate(messageId, count = 1) {
      checkCount('count', count);
      const latest = rt.byId.get(messageId)?.at(-1);
      if (latest?.acked) addDuplicateCopies(rt, latest, count);
      else rt.plan.addDuplicates(messageId, count);
    },
    concurrent(messageId) {
      rt.plan.addConcurrent(messageId);
    },
    crash(point, messageId, times = 1) {
      rt.plan.addCrash(point, messageId, checkCount('times', times));
    },
  };
}

/** Resolves once the broker is idle; see {@link MemoryBroker.whenIdle}. */
function whenIdle(rt: BrokerRuntime, options: WhenIdleOptions): Promise<void> {
  const timeoutMs = checkDelay('timeoutMs', options.timeoutMs, 30_000);
  if (isIdle(rt)) return Promise.resolve();
  return new Promise<void>((resolve, reject) => {
    const done = (): void => {
      clearTimeout(timer);
      rt.idleWaiters.delete(done);
      resolve();
    };
    const timer = setTimeout(() => {
      rt.idleWaiters.delete(done);
      const { ready, inFlight, scheduled } = stats(rt);
      reject(new IdleTimeoutError(timeoutMs, { ready, inFlight, scheduled }));
    }, timeoutMs);
    rt.idleWaiters.add(done);
  });
}

/** Stops every consumer (draining), drops pending redeliveries. */
async function closeBroker(rt: BrokerRuntime): Promise<void> {
  if (rt.closed) return;
  rt.closed = true;
  for (const timer of rt.timers) clearTimeout(timer);
  rt.timers.clear();
  for (const queue of rt.queues.values()) queue.scheduled = 0;
  await Promise.all([...rt.consumers].map((consumer) => consumer.stop()));
  notifyIfIdle(rt);
}

/**
 * Creates an in-memory broker. See {@link MemoryBroker} for its delivery contract.
 *
 * @example
 * ```ts
 * const broker = createMemoryBroker({ seed: 7, faults: { duplicateRate: 0.2 } });
 * const inbox = createInbox({ store, consumer: 'payments', onStep: broker.onStep });
 * await broker.consume('payments', { inbox, handler, concurrency: 4 }).start();
 * broker.send('payments', { id: 'm-1', body: '{"amount":100}' });
 * await broker.whenIdle();
 * ```
 */
export function createMemoryBroker(options: MemoryBrokerOptions = {}): MemoryBroker {
  const rt: BrokerRuntime = {
    options: resolveBrokerOptions(options),
    plan: new FaultPlan(options.faults ?? {}, seededRandom(options.seed ?? 1)),
    queues: new Map(),
    byId: new Map(),
    timers: new Set(),
    listeners: new Set(),
    idleWaiters: new Set(),
    log: [],
    consumers: new Set(),
    startDelivery,
    closed: false,
  };
  return {
    publisher: () => brokerPublisher(rt),
    send: (queue, messages) => send(rt, queue, messages),
    consume: (queue, consumeOptions) => createMemoryConsumer(rt, queue, consumeOptions),
    faults: faultInjector(rt),
    onStep(step, messageId) {
      if (rt.plan.takeCrash(step, messageId)) throw new SimulatedCrashError(step, messageId);
    },
    whenIdle: (idleOptions = {}) => whenIdle(rt, idleOptions),
    stats: (queue) => stats(rt, queue),
    injected: () => rt.plan.injected(),
    deadLetters: (queue) => [...(rt.queues.get(queue)?.deadLetters ?? [])],
    log: rt.log,
    onDelivery(listener) {
      rt.listeners.add(listener);
      return () => {
        rt.listeners.delete(listener);
      };
    },
    close: () => closeBroker(rt),
  };
}
