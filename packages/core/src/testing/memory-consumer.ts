import { finishesWithin } from '../common/time';
import { consumerLifecycle, type ConsumerStopOptions } from '../consumer';
import { BrokerClosedError } from './errors';
import { checkQueueName, resolveConsumeOptions } from './memory-broker-options';
import type {
  BrokerRuntime,
  ConsumeOptions,
  ConsumerState,
  MemoryConsumer,
} from './memory-broker-types';
import { releaseDelivery } from './memory-delivery';
import { notifyIfIdle, pump, queueOf } from './memory-queue';

/** Why a stop gave a delivery back. */
class StopReleaseError extends Error {
  constructor(drained: boolean) {
    super(drained ? 'the drain timed out at stop' : 'stopped without drain');
    this.name = 'StopReleaseError';
  }
}

/** Waits until nothing of the consumer runs (a settling delivery may start no new one). */
async function settled(state: ConsumerState): Promise<void> {
  while (state.running.size > 0) await Promise.all([...state.running.values()]);
}

/** Takes the consumer off its queue, so no new delivery reaches it. */
function detach(state: ConsumerState): void {
  state.stopped = true;
  const { queue } = state;
  const index = queue.consumers.indexOf(state);
  if (index >= 0) queue.consumers.splice(index, 1);
  queue.nextConsumer = 0;
  // Held deliveries wake up and see the stop: they are released, not retried.
  for (const delivery of state.running.keys()) delivery.wake?.();
}

/**
 * The stop hook: detach; with `drain`, wait for the work in flight up to `timeoutMs`; what
 * is still running then (or at once without drain) is given back and its signal aborted.
 * Either way the handlers' runs are waited for, so no work outlives `stop`.
 */
async function stopConsumer(
  rt: BrokerRuntime,
  state: ConsumerState,
  options: Required<ConsumerStopOptions>,
): Promise<void> {
  detach(state);
  const drained = options.drain && (await finishesWithin(settled(state), options.timeoutMs));
  if (!drained) {
    const error = new StopReleaseError(options.drain);
    for (const delivery of [...state.running.keys()]) releaseDelivery(rt, state, delivery, error);
    state.abort.abort(error);
  }
  await settled(state);
  pump(rt, state.queue);
  notifyIfIdle(rt);
}

/** A consumer of `queueName`, not started; see {@link MemoryBroker.consume}. @internal */
export function createMemoryConsumer<R>(
  rt: BrokerRuntime,
  queueName: string,
  options: ConsumeOptions<R>,
): MemoryConsumer {
  if (rt.closed) throw new BrokerClosedError('consume');
  const queue = queueOf(rt, checkQueueName(queueName));
  const state: ConsumerState = {
    queue,
    // The hook is typed by the caller's R; the broker passes the inbox's outcomes through.
    options: resolveConsumeOptions(queue.name, options) as unknown as ConsumerState['options'],
    running: new Map(),
    abort: new AbortController(),
    stopped: false,
  };
  const lifecycle = consumerLifecycle(`memory consumer of ${queue.name}`, {
    start: async () => {
      if (rt.closed) throw new BrokerClosedError('start');
      queue.consumers.push(state);
      pump(rt, queue);
    },
    stop: (stopOptions) => stopConsumer(rt, state, stopOptions),
  });
  const consumer: MemoryConsumer = {
    queue: queue.name,
    start: () => lifecycle.start(),
    stop: (stopOptions) => lifecycle.stop(stopOptions),
    get running() {
      return lifecycle.running;
    },
    get inFlight() {
      return state.running.size;
    },
  };
  rt.consumers.add(consumer);
  return consumer;
}
