import { BrokerClosedError } from './errors';
import { checkQueueName } from './memory-broker-options';
import type {
  BrokerRuntime,
  BrokerStats,
  ConsumerState,
  DeliveryRecord,
  MemoryMessage,
  QueueState,
  StoredMessage,
  Ticket,
} from './memory-broker-types';

/** The queue of that name, made on first use. @internal */
export function queueOf(rt: BrokerRuntime, name: string): QueueState {
  let queue = rt.queues.get(name);
  if (!queue) {
    queue = {
      name,
      ready: [],
      consumers: [],
      deadLetters: [],
      counters: {
        published: 0,
        deliveries: 0,
        acked: 0,
        processed: 0,
        duplicates: 0,
        failed: 0,
        deadLettered: 0,
        crashed: 0,
        released: 0,
        redriven: 0,
      },
      nextConsumer: 0,
      inFlight: 0,
      scheduled: 0,
      sent: 0,
    };
    rt.queues.set(name, queue);
  }
  return queue;
}

/** Nothing running, nothing scheduled, no consumed queue holding a ready message. @internal */
export function isIdle(rt: BrokerRuntime): boolean {
  for (const queue of rt.queues.values()) {
    if (queue.inFlight > 0 || queue.scheduled > 0) return false;
    if (queue.ready.length > 0 && queue.consumers.length > 0) return false;
  }
  return true;
}

/** Wakes the `whenIdle` waiters once the broker is idle. @internal */
export function notifyIfIdle(rt: BrokerRuntime): void {
  if (rt.idleWaiters.size === 0 || !isIdle(rt)) return;
  for (const resolve of [...rt.idleWaiters]) resolve();
}

/** Runs `call`; a throw (a listener's bug) is surfaced on its own, never in the broker. @internal */
export function safely(call: () => void): void {
  try {
    call();
  } catch (error) {
    queueMicrotask(() => {
      throw error;
    });
  }
}

/** Appends to the delivery log and tells the listeners. @internal */
export function record(
  rt: BrokerRuntime,
  queue: QueueState,
  entry: Omit<DeliveryRecord, 'sequence' | 'queue'>,
): void {
  const full: DeliveryRecord = { sequence: rt.log.length + 1, queue: queue.name, ...entry };
  rt.log.push(full);
  for (const listener of rt.listeners) safely(() => listener(full));
}

/** Puts a copy on the queue and hands out what can be handed out. @internal */
export function enqueue(rt: BrokerRuntime, queue: QueueState, ticket: Ticket): void {
  queue.ready.push(ticket);
  pump(rt, queue);
}

/** Brings a message back after `delayMs`, unless the broker closes first. @internal */
export function redeliverLater(
  rt: BrokerRuntime,
  queue: QueueState,
  stored: StoredMessage,
  delayMs: number,
): void {
  if (rt.closed) return;
  queue.scheduled += 1;
  const timer = setTimeout(() => {
    rt.timers.delete(timer);
    queue.scheduled -= 1;
    enqueue(rt, queue, { stored, kind: 'redelivery' });
    notifyIfIdle(rt);
  }, delayMs);
  rt.timers.add(timer);
}

/** Injects `copies` broker duplicates of an acknowledged message. @internal */
export function addDuplicateCopies(rt: BrokerRuntime, stored: StoredMessage, copies: number): void {
  if (copies < 1) return;
  rt.plan.countDuplicates(copies);
  const queue = queueOf(rt, stored.queue);
  for (let i = 0; i < copies; i += 1) queue.ready.push({ stored, kind: 'duplicate' });
  pump(rt, queue);
}

/** The next consumer with a free slot, round robin. */
function nextConsumer(queue: QueueState): ConsumerState | undefined {
  const count = queue.consumers.length;
  for (let i = 0; i < count; i += 1) {
    const consumer = queue.consumers[(queue.nextConsumer + i) % count] as ConsumerState;
    if (consumer.running.size < consumer.options.concurrency) {
      queue.nextConsumer = (queue.nextConsumer + i + 1) % count;
      return consumer;
    }
  }
  return undefined;
}

/** Moves a message received `maxReceiveCount` times to the dead-letter list, undelivered. */
function redrive(rt: BrokerRuntime, queue: QueueState, ticket: Ticket): void {
  const { stored } = ticket;
  queue.counters.redriven += 1;
  queue.deadLetters.push({
    queue: queue.name,
    message: stored.message,
    reason: 'MAX_RECEIVE_COUNT',
    receiveCount: stored.receiveCount,
  });
  record(rt, queue, {
    messageId: stored.message.id,
    receiveCount: stored.receiveCount,
    kind: ticket.kind,
    result: 'redriven',
    acked: true,
  });
}

/** Hands ready copies to consumers with free slots. @internal */
export function pump(rt: BrokerRuntime, queue: QueueState): void {
  if (rt.closed) return;
  while (queue.ready.length > 0) {
    const consumer = nextConsumer(queue);
    if (!consumer) return;
    const ticket = queue.ready.shift() as Ticket;
    const { stored } = ticket;
    if (stored.receiveCount >= rt.options.maxReceiveCount) {
      redrive(rt, queue, ticket);
      continue;
    }
    rt.startDelivery(rt, consumer, ticket);
    const id = stored.message.id;
    if (id !== undefined && rt.plan.takeConcurrent(id)) {
      // The point of this fault is two handlers at once, so the second copy runs even when
      // the consumer has no free slot left.
      rt.startDelivery(rt, consumer, { stored, kind: 'concurrent' });
    }
  }
}

/** Puts messages on a queue. @internal */
export function send(
  rt: BrokerRuntime,
  queueName: string,
  messages: MemoryMessage | readonly MemoryMessage[],
): void {
  if (rt.closed) throw new BrokerClosedError('send');
  const queue = queueOf(rt, checkQueueName(queueName));
  const list: readonly MemoryMessage[] = Array.isArray(messages)
    ? messages
    : [messages as MemoryMessage];
  for (const message of list) {
    queue.sent += 1;
    const brokerId = `${queue.name}#${queue.sent}`;
    const stored: StoredMessage = {
      queue: queue.name,
      message,
      brokerId,
      receiveCount: 0,
      acked: false,
    };
    if (message.id !== undefined) {
      const same = rt.byId.get(message.id) ?? [];
      same.push(stored);
      rt.byId.set(message.id, same);
    }
    rt.plan.planRandom(message.id);
    queue.counters.published += 1;
    queue.ready.push({ stored, kind: 'original' });
  }
  pump(rt, queue);
}

/** Counters for one queue, or for all queues together. @internal */
export function stats(rt: BrokerRuntime, queueName?: string): BrokerStats {
  const selected =
    queueName === undefined
      ? [...rt.queues.values()]
      : [rt.queues.get(queueName)].filter((q): q is QueueState => q !== undefined);
  const sum = (pick: (q: QueueState) => number): number =>
    selected.reduce((total, q) => total + pick(q), 0);
  const counter = (name: keyof QueueState['counters']): number => sum((q) => q.counters[name]);
  return {
    published: counter('published'),
    deliveries: counter('deliveries'),
    acked: counter('acked'),
    processed: counter('processed'),
    duplicates: counter('duplicates'),
    failed: counter('failed'),
    deadLettered: counter('deadLettered'),
    crashed: counter('crashed'),
    released: counter('released'),
    redriven: counter('redriven'),
    ready: sum((q) => q.ready.length),
    inFlight: sum((q) => q.inFlight),
    scheduled: sum((q) => q.scheduled),
  };
}
