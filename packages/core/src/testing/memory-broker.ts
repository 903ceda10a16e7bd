import { optionKeys, rejectUnknownOptions } from '../config/options';
import { ConfigurationError } from '../errors';
import type { Handler, Inbox, InboxOutcome, InboxStep } from '../inbox/types';
import type { Envelope } from '../transport/envelope';
import { MESSAGE_ID_HEADER, messageHeaders } from '../transport/message-headers';
import type { OutgoingMessage, Publisher, PublishResult } from '../transport/publisher';
import {
  BrokerClosedError,
  IdleTimeoutError,
  SimulatedCrashError,
  isSimulatedCrash,
} from './errors';
import {
  FaultPlan,
  checkCount,
  type CrashPoint,
  type FaultInjector,
  type FaultRates,
  type InjectedFaults,
} from './faults';
import { seededRandom } from './random';

/** A message as it sits in an in-memory queue. */
export interface MemoryMessage {
  /** The message id; `undefined` stands for a message that arrived without one. */
  readonly id: string | undefined;
  /** The body, delivered as given. */
  readonly body: Uint8Array | string;
  /** Headers; `message-id` is added from `id` on delivery. */
  readonly headers?: Readonly<Record<string, string>>;
  /** Partition key, if any. */
  readonly key?: string | null;
  /** Scope (tenant); defaults to the `tenant` header. */
  readonly scope?: string;
}

/** Why a copy of a message was delivered. */
export type DeliveryKind =
  /** The copy made when the message was published. */
  | 'original'
  /** An extra copy injected as a broker duplicate. */
  | 'duplicate'
  /** The second of two copies handed to two handlers at the same time. */
  | 'concurrent'
  /** A copy delivered again after a failure or a crash. */
  | 'redelivery';

/** What became of one delivery. */
export type DeliveryResult =
  | 'processed'
  | 'duplicate'
  | 'failed'
  | 'dead-lettered'
  /** The consumer "died" (an injected crash or an unexpected throw): no acknowledgement. */
  | 'crashed'
  /** Not delivered: the message reached `maxReceiveCount` and went to the dead-letter list. */
  | 'redriven';

/** One line of the broker's delivery log. */
export interface DeliveryRecord {
  /** 1-based order in which deliveries settled. */
  readonly sequence: number;
  readonly queue: string;
  readonly messageId: string | undefined;
  /** How many times the message had been received, this delivery included. */
  readonly receiveCount: number;
  readonly kind: DeliveryKind;
  readonly result: DeliveryResult;
  /** Whether the broker acknowledged (removed) this copy. */
  readonly acked: boolean;
  /** Where an injected crash fired, for `crashed` results. */
  readonly crashPoint?: CrashPoint;
  /** The inbox outcome, when the consumer returned one. */
  readonly outcome?: InboxOutcome;
  /** The error of a `crashed` or `failed` delivery. */
  readonly error?: Error;
  /** When the message comes back, for `failed` and `crashed` results. */
  readonly redeliveryDelayMs?: number;
}

/** A message moved to a queue's dead-letter list. */
export interface DeadLetteredMessage {
  readonly queue: string;
  readonly message: MemoryMessage;
  /** The inbox's reason (`MAX_ATTEMPTS`, `MISSING_MESSAGE_ID`, …) or `MAX_RECEIVE_COUNT`. */
  readonly reason: string;
  readonly error?: Error;
  /** The dead letter's id in the store, when the inbox recorded one. */
  readonly deadLetterId?: string;
  readonly receiveCount: number;
}

/** Counters of a broker or of one of its queues. */
export interface BrokerStats {
  /** Messages published (duplicates the broker injects are not counted here). */
  readonly published: number;
  /** Copies handed to a consumer. */
  readonly deliveries: number;
  /** Copies acknowledged. */
  readonly acked: number;
  readonly processed: number;
  /** Deliveries the inbox recognised as duplicates. */
  readonly duplicates: number;
  readonly failed: number;
  readonly deadLettered: number;
  readonly crashed: number;
  readonly redriven: number;
  /** Copies waiting to be delivered. */
  readonly ready: number;
  /** Deliveries running now. */
  readonly inFlight: number;
  /** Copies waiting for a redelivery delay to pass. */
  readonly scheduled: number;
}

/** Decides one delivery; an inbox's `process` bound to a handler is the usual one. */
export type DeliveryProcessor = (envelope: Envelope) => Promise<InboxOutcome>;

/** Options of {@link MemoryBroker.consume}. Give `inbox` and `handler`, or `process`. */
export type ConsumeOptions<R = unknown> = {
  /** Deliveries running at once. Default 1. */
  readonly concurrency?: number;
} & (
  | { readonly inbox: Inbox; readonly handler: Handler<R>; readonly process?: never }
  | { readonly process: DeliveryProcessor; readonly inbox?: never; readonly handler?: never }
);

/** A running consumer of one queue. */
export interface MemoryConsumer {
  readonly queue: string;
  /** Stops taking deliveries and waits for the running ones to settle. Idempotent. */
  stop(): Promise<void>;
}

/** Options of {@link createMemoryBroker}. */
export interface MemoryBrokerOptions {
  /** Seed of the random source behind the fault rates. Default 1. */
  readonly seed?: number;
  /** Faults injected at random into every published message. Default none. */
  readonly faults?: FaultRates;
  /**
   * How long a message whose consumer crashed stays invisible before it is redelivered, like
   * a visibility timeout. Default 5 ms.
   */
  readonly crashRedeliveryDelayMs?: number;
  /**
   * Upper bound on the delay before a failed delivery comes back; the inbox's `retryDelayMs`
   * is cut to it, so tests need not wait out real backoff. Default: no bound.
   */
  readonly maxRetryDelayMs?: number;
  /**
   * Receives after which a message is moved to the dead-letter list without being delivered
   * again, like an SQS redrive policy. A safety net against a consumer that never settles.
   * Default: no limit.
   */
  readonly maxReceiveCount?: number;
}

/** Options of {@link MemoryBroker.whenIdle}. */
export interface WhenIdleOptions {
  /** Reject with {@link IdleTimeoutError} after this long. Default 30 000 ms. */
  readonly timeoutMs?: number;
}

/**
 * An in-process broker with named queues and at-least-once delivery, for tests and demos.
 *
 * Contract:
 * - Every published message is delivered until a delivery of it is acknowledged; a consumer
 *   that crashes (throws, or hits an injected crash) gets it again later.
 * - Outcomes are followed as `inbox/types.ts` says: `processed` and `duplicate` are
 *   acknowledged; `failed` comes back after `retryDelayMs`; `dead-lettered` goes to the
 *   queue's dead-letter list and is acknowledged.
 * - Delivery facts carry `attempt` and `receiveCount` (receives of the message so far, every
 *   copy counted, as SQS counts them), `redelivered` and `source` (the queue).
 * - Faults come from {@link MemoryBroker.faults} and the seeded rates; crashes at inbox steps
 *   need the inbox to be built with `onStep: broker.onStep`.
 * - There is no ordering guarantee between messages, as with most brokers under redelivery.
 */
export interface MemoryBroker {
  /** A {@link Publisher} into this broker: `destination` is the queue name. */
  publisher(): Publisher;
  /** Puts messages on a queue. */
  send(queue: string, messages: MemoryMessage | readonly MemoryMessage[]): void;
  /** Starts a consumer on a queue; several consumers of one queue compete for its messages. */
  consume<R>(queue: string, options: ConsumeOptions<R>): MemoryConsumer;
  /** Explicit fault injection by message id. */
  readonly faults: FaultInjector;
  /** Pass as the inbox's `onStep` option so that crashes at inbox steps can fire. */
  readonly onStep: (step: InboxStep, messageId: string) => void;
  /**
   * Resolves when nothing is running, nothing waits for a redelivery delay, and no consumed
   * queue holds a ready message. Event-driven; rejects with {@link IdleTimeoutError}.
   */
  whenIdle(options?: WhenIdleOptions): Promise<void>;
  /** Counters for one queue, or for all queues together. */
  stats(queue?: string): BrokerStats;
  /** Faults injected so far. */
  injected(): InjectedFaults;
  /** The messages a queue dead-lettered, oldest first. */
  deadLetters(queue: string): readonly DeadLetteredMessage[];
  /** Every settled delivery, in order. */
  readonly log: readonly DeliveryRecord[];
  /** Calls `listener` after each settled delivery; returns a function that unsubscribes. */
  onDelivery(listener: (record: DeliveryRecord) => void): () => void;
  /** Stops every consumer, drops pending redeliveries, and refuses further use. Idempotent. */
  close(): Promise<void>;
}

interface StoredMessage {
  readonly queue: string;
  readonly message: MemoryMessage;
  receiveCount: number;
  acked: boolean;
}

interface Ticket {
  readonly stored: StoredMessage;
  readonly kind: DeliveryKind;
}

interface ConsumerState {
  readonly queue: QueueState;
  readonly concurrency: number;
  readonly process: DeliveryProcessor;
  readonly running: Set<Promise<void>>;
  stopped: boolean;
}

type Counter = Exclude<keyof BrokerStats, 'ready' | 'inFlight' | 'scheduled'>;

interface QueueState {
  readonly name: string;
  readonly ready: Ticket[];
  readonly consumers: ConsumerState[];
  readonly deadLetters: DeadLetteredMessage[];
  readonly counters: Record<Counter, number>;
  nextConsumer: number;
  inFlight: number;
  scheduled: number;
}

const BROKER_KEYS = optionKeys<MemoryBrokerOptions>()([
  'seed',
  'faults',
  'crashRedeliveryDelayMs',
  'maxRetryDelayMs',
  'maxReceiveCount',
]);
const FAULT_KEYS = optionKeys<FaultRates>()(['duplicateRate', 'concurrentRate', 'crashRate']);

/** Refuses keys {@link MemoryBrokerOptions} (and its `faults`) do not declare. @internal */
export function rejectUnknownBrokerOptions(value: unknown, context: string, path = ''): void {
  rejectUnknownOptions(value, BROKER_KEYS, context, path);
  const faults: unknown = (value as MemoryBrokerOptions | undefined)?.faults;
  rejectUnknownOptions(faults, FAULT_KEYS, context, path === '' ? 'faults' : `${path}.faults`);
}

function checkDelay(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !(value >= 0)) {
    throw new ConfigurationError(`${name} must be a number of milliseconds, 0 or more`, {
      [name]: value,
    });
  }
  return value;
}

function checkQueueName(queue: unknown): string {
  if (typeof queue !== 'string' || queue.length === 0) {
    throw new ConfigurationError('a queue name must be a non-empty string', { queue });
  }
  return queue;
}

function toError(value: unknown): Error {
  return value instanceof Error ? value : new Error(String(value));
}

function envelopeOf(stored: StoredMessage): Envelope {
  const { message } = stored;
  const headers: Record<string, string> = { ...message.headers };
  if (message.id !== undefined) headers[MESSAGE_ID_HEADER] = message.id;
  const scope = message.scope ?? headers.tenant;
  return {
    id: message.id,
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

/**
 * Creates an in-memory broker. See {@link MemoryBroker} for its delivery contract.
 *
 * @example
 * ```ts
 * const broker = createMemoryBroker({ seed: 7, faults: { duplicateRate: 0.2 } });
 * const inbox = createInbox({ store, consumer: 'payments', onStep: broker.onStep });
 * broker.consume('payments', { inbox, handler, concurrency: 4 });
 * broker.send('payments', { id: 'm-1', body: '{"amount":100}' });
 * await broker.whenIdle();
 * ```
 */
export function createMemoryBroker(options: MemoryBrokerOptions = {}): MemoryBroker {
  rejectUnknownBrokerOptions(options, 'createMemoryBroker');
  const crashDelayMs = checkDelay('crashRedeliveryDelayMs', options.crashRedeliveryDelayMs, 5);
  const maxRetryDelayMs = checkDelay('maxRetryDelayMs', options.maxRetryDelayMs, Infinity);
  const maxReceiveCount =
    options.maxReceiveCount === undefined
      ? Infinity
      : checkCount('maxReceiveCount', options.maxReceiveCount);
  const plan = new FaultPlan(options.faults ?? {}, seededRandom(options.seed ?? 1));

  const queues = new Map<string, QueueState>();
  const byId = new Map<string, StoredMessage[]>();
  const timers = new Set<NodeJS.Timeout>();
  const listeners = new Set<(record: DeliveryRecord) => void>();
  const idleWaiters = new Set<() => void>();
  const log: DeliveryRecord[] = [];
  let closed = false;

  function queueOf(name: string): QueueState {
    let queue = queues.get(name);
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
          redriven: 0,
        },
        nextConsumer: 0,
        inFlight: 0,
        scheduled: 0,
      };
      queues.set(name, queue);
    }
    return queue;
  }

  function isIdle(): boolean {
    for (const queue of queues.values()) {
      if (queue.inFlight > 0 || queue.scheduled > 0) return false;
      if (queue.ready.length > 0 && queue.consumers.length > 0) return false;
    }
    return true;
  }

  function notifyIfIdle(): void {
    if (idleWaiters.size === 0 || !isIdle()) return;
    for (const resolve of [...idleWaiters]) resolve();
  }

  function enqueue(queue: QueueState, ticket: Ticket): void {
    queue.ready.push(ticket);
    pump(queue);
  }

  function redeliverLater(queue: QueueState, stored: StoredMessage, delayMs: number): void {
    if (closed) return;
    queue.scheduled += 1;
    const timer = setTimeout(() => {
      timers.delete(timer);
      queue.scheduled -= 1;
      enqueue(queue, { stored, kind: 'redelivery' });
      notifyIfIdle();
    }, delayMs);
    timers.add(timer);
  }

  function addDuplicateCopies(stored: StoredMessage, copies: number): void {
    if (copies < 1) return;
    plan.countDuplicates(copies);
    const queue = queueOf(stored.queue);
    for (let i = 0; i < copies; i += 1) queue.ready.push({ stored, kind: 'duplicate' });
    pump(queue);
  }

  function record(queue: QueueState, entry: Omit<DeliveryRecord, 'sequence' | 'queue'>): void {
    const full: DeliveryRecord = { sequence: log.length + 1, queue: queue.name, ...entry };
    log.push(full);
    for (const listener of listeners) {
      try {
        listener(full);
      } catch (error) {
        // A listener's bug must not corrupt the broker's state; surface it on its own.
        queueMicrotask(() => {
          throw error;
        });
      }
    }
  }

  function settle(
    consumer: ConsumerState,
    ticket: Ticket,
    receiveCount: number,
    settled: { outcome: InboxOutcome } | { thrown: unknown },
  ): void {
    const { queue } = consumer;
    const { stored, kind } = ticket;
    const messageId = stored.message.id;
    const base = { messageId, receiveCount, kind };
    const crash = (error: Error, point: CrashPoint | undefined, outcome?: InboxOutcome): void => {
      queue.counters.crashed += 1;
      record(queue, {
        ...base,
        result: 'crashed',
        acked: false,
        error,
        redeliveryDelayMs: crashDelayMs,
        ...(point === undefined ? {} : { crashPoint: point }),
        ...(outcome === undefined ? {} : { outcome }),
      });
      redeliverLater(queue, stored, crashDelayMs);
    };
    const ack = (): void => {
      queue.counters.acked += 1;
      if (!stored.acked) {
        stored.acked = true;
        if (messageId !== undefined) addDuplicateCopies(stored, plan.takeDuplicates(messageId));
      }
    };

    if ('thrown' in settled) {
      const error = toError(settled.thrown);
      crash(error, isSimulatedCrash(error) ? error.point : undefined);
      return;
    }
    const { outcome } = settled;
    switch (outcome.status) {
      case 'processed':
      case 'duplicate':
      case 'dead-lettered': {
        if (plan.takeCrash('after-commit-before-ack', messageId)) {
          const error = new SimulatedCrashError('after-commit-before-ack', messageId);
          crash(error, 'after-commit-before-ack', outcome);
          return;
        }
        if (outcome.status === 'dead-lettered') {
          queue.counters.deadLettered += 1;
          queue.deadLetters.push({
            queue: queue.name,
            message: stored.message,
            reason: outcome.reason,
            error: outcome.error,
            deadLetterId: outcome.deadLetterId,
            receiveCount,
          });
        } else if (outcome.status === 'processed') {
          queue.counters.processed += 1;
        } else {
          queue.counters.duplicates += 1;
        }
        ack();
        record(queue, { ...base, result: outcome.status, acked: true, outcome });
        return;
      }
      case 'failed': {
        if (isSimulatedCrash(outcome.error)) {
          crash(outcome.error, outcome.error.point, outcome);
          return;
        }
        const delay = Math.min(Math.max(0, outcome.retryDelayMs), maxRetryDelayMs);
        queue.counters.failed += 1;
        record(queue, {
          ...base,
          result: 'failed',
          acked: false,
          outcome,
          error: outcome.error,
          redeliveryDelayMs: delay,
        });
        redeliverLater(queue, stored, delay);
        return;
      }
    }
  }

  function start(consumer: ConsumerState, ticket: Ticket): void {
    const { queue } = consumer;
    const { stored } = ticket;
    stored.receiveCount += 1;
    const receiveCount = stored.receiveCount;
    queue.counters.deliveries += 1;
    queue.inFlight += 1;
    const envelope = envelopeOf(stored);
    const running = Promise.resolve()
      .then(() => consumer.process(envelope))
      .then(
        (outcome) => ({ outcome }),
        (thrown: unknown) => ({ thrown }),
      )
      .then((settled) => {
        queue.inFlight -= 1;
        consumer.running.delete(running);
        settle(consumer, ticket, receiveCount, settled);
        pump(queue);
        notifyIfIdle();
      });
    consumer.running.add(running);
  }

  function nextConsumer(queue: QueueState): ConsumerState | undefined {
    const count = queue.consumers.length;
    for (let i = 0; i < count; i += 1) {
      const consumer = queue.consumers[(queue.nextConsumer + i) % count] as ConsumerState;
      if (consumer.running.size < consumer.concurrency) {
        queue.nextConsumer = (queue.nextConsumer + i + 1) % count;
        return consumer;
      }
    }
    return undefined;
  }

  function pump(queue: QueueState): void {
    if (closed) return;
    while (queue.ready.length > 0) {
      const consumer = nextConsumer(queue);
      if (!consumer) return;
      const ticket = queue.ready.shift() as Ticket;
      const { stored } = ticket;
      if (stored.receiveCount >= maxReceiveCount) {
        queue.counters.redriven += 1;
        queue.deadLetters.push({
          queue: queue.name,
          message: stored.message,
          reason: 'MAX_RECEIVE_COUNT',
          receiveCount: stored.receiveCount,
        });
        record(queue, {
          messageId: stored.message.id,
          receiveCount: stored.receiveCount,
          kind: ticket.kind,
          result: 'redriven',
          acked: true,
        });
        continue;
      }
      start(consumer, ticket);
      const id = stored.message.id;
      if (id !== undefined && plan.takeConcurrent(id)) {
        // The point of this fault is two handlers at once, so the second copy runs even when
        // the consumer has no free slot left.
        start(consumer, { stored, kind: 'concurrent' });
      }
    }
  }

  function send(queueName: string, messages: MemoryMessage | readonly MemoryMessage[]): void {
    if (closed) throw new BrokerClosedError('send');
    const queue = queueOf(checkQueueName(queueName));
    const list: readonly MemoryMessage[] = Array.isArray(messages)
      ? messages
      : [messages as MemoryMessage];
    for (const message of list) {
      const stored: StoredMessage = { queue: queue.name, message, receiveCount: 0, acked: false };
      if (message.id !== undefined) {
        const same = byId.get(message.id) ?? [];
        same.push(stored);
        byId.set(message.id, same);
      }
      plan.planRandom(message.id);
      queue.counters.published += 1;
      queue.ready.push({ stored, kind: 'original' });
    }
    pump(queue);
  }

  const faults: FaultInjector = {
    duplicate(messageId, count = 1) {
      checkCount('count', count);
      const latest = byId.get(messageId)?.at(-1);
      if (latest?.acked) addDuplicateCopies(latest, count);
      else plan.addDuplicates(messageId, count);
    },
    concurrent(messageId) {
      plan.addConcurrent(messageId);
    },
    crash(point, messageId, times = 1) {
      plan.addCrash(point, messageId, checkCount('times', times));
    },
  };

  function stats(queueName?: string): BrokerStats {
    const selected =
      queueName === undefined
        ? [...queues.values()]
        : [queues.get(queueName)].filter((q): q is QueueState => q !== undefined);
    const sum = (pick: (q: QueueState) => number): number =>
      selected.reduce((total, q) => total + pick(q), 0);
    return {
      published: sum((q) => q.counters.published),
      deliveries: sum((q) => q.counters.deliveries),
      acked: sum((q) => q.counters.acked),
      processed: sum((q) => q.counters.processed),
      duplicates: sum((q) => q.counters.duplicates),
      failed: sum((q) => q.counters.failed),
      deadLettered: sum((q) => q.counters.deadLettered),
      crashed: sum((q) => q.counters.crashed),
      redriven: sum((q) => q.counters.redriven),
      ready: sum((q) => q.ready.length),
      inFlight: sum((q) => q.inFlight),
      scheduled: sum((q) => q.scheduled),
    };
  }

  return {
    publisher(): Publisher {
      let publisherClosed = false;
      return {
        async publish(messages: readonly OutgoingMessage[]): Promise<PublishResult[]> {
          if (publisherClosed) throw new BrokerClosedError('publish on a closed publisher');
          // Refused even for an empty call, which would not reach `send`'s own check.
          if (closed) throw new BrokerClosedError('publish');
          const results: PublishResult[] = [];
          for (const m of messages) {
            send(m.destination, {
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
    },
    send,
    consume<R>(queueName: string, consumeOptions: ConsumeOptions<R>): MemoryConsumer {
      if (closed) throw new BrokerClosedError('consume');
      const queue = queueOf(checkQueueName(queueName));
      const concurrency = checkCount('concurrency', consumeOptions.concurrency ?? 1);
      let process: DeliveryProcessor;
      if (consumeOptions.process !== undefined) {
        if (typeof consumeOptions.process !== 'function') {
          throw new ConfigurationError('process must be a function');
        }
        process = consumeOptions.process;
      } else {
        const { inbox, handler } = consumeOptions;
        if (!inbox || typeof inbox.process !== 'function' || typeof handler !== 'function') {
          throw new ConfigurationError('consume needs an inbox and a handler, or a process');
        }
        process = (envelope) => inbox.process(envelope, handler);
      }
      const consumer: ConsumerState = {
        queue,
        concurrency,
        process,
        running: new Set(),
        stopped: false,
      };
      queue.consumers.push(consumer);
      pump(queue);
      return {
        queue: queue.name,
        async stop() {
          if (!consumer.stopped) {
            consumer.stopped = true;
            const index = queue.consumers.indexOf(consumer);
            if (index >= 0) queue.consumers.splice(index, 1);
            queue.nextConsumer = 0;
          }
          while (consumer.running.size > 0) await Promise.all([...consumer.running]);
          notifyIfIdle();
        },
      };
    },
    faults,
    onStep(step, messageId) {
      if (plan.takeCrash(step, messageId)) throw new SimulatedCrashError(step, messageId);
    },
    whenIdle(idleOptions: WhenIdleOptions = {}): Promise<void> {
      const timeoutMs = checkDelay('timeoutMs', idleOptions.timeoutMs, 30_000);
      if (isIdle()) return Promise.resolve();
      return new Promise<void>((resolve, reject) => {
        const done = (): void => {
          clearTimeout(timer);
          idleWaiters.delete(done);
          resolve();
        };
        const timer = setTimeout(() => {
          idleWaiters.delete(done);
          const { ready, inFlight, scheduled } = stats();
          reject(new IdleTimeoutError(timeoutMs, { ready, inFlight, scheduled }));
        }, timeoutMs);
        idleWaiters.add(done);
      });
    },
    stats,
    injected: () => plan.injected(),
    deadLetters: (queueName) => [...(queues.get(queueName)?.deadLetters ?? [])],
    log,
    onDelivery(listener) {
      listeners.add(listener);
      return () => {
        listeners.delete(listener);
      };
    },
    async close() {
      if (closed) return;
      closed = true;
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      for (const queue of queues.values()) queue.scheduled = 0;
      const running = [...queues.values()].flatMap((q) =>
        q.consumers.flatMap((c) => {
          c.stopped = true;
          return [...c.running];
        }),
      );
      for (const queue of queues.values()) queue.consumers.length = 0;
      await Promise.all(running);
      notifyIfIdle();
    },
  };
}
