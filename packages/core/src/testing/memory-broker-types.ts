import type { ResilienceOptions } from '../resilience/types';
import type { FaultPlan, CrashPoint, FaultRates, FaultInjector, InjectedFaults } from './faults';
import type { Handler, Inbox, InboxOutcome, InboxStep } from '../inbox/types';
import type { Envelope } from '../transport/envelope';
import type { Publisher } from '../transport/publisher';
import type {
  Consumer,
  DeadLetterFacts,
  MessageIdOptions,
  ResolvedMessageId,
  SettledEvent,
} from '../consumer';

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
  /** Given back unsettled by a `stop({ drain: false })` (or a drain that timed out). */
  | 'released'
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
  /**
   * The shared dead-letter facts, when the inbox dead-lettered it; the message's headers
   * then also carry them (`deadLetterHeaders`), as every transport forwards them.
   */
  readonly facts?: DeadLetterFacts;
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
  /** Deliveries given back unsettled by a stop without drain. */
  readonly released: number;
  readonly redriven: number;
  /** Copies waiting to be delivered. */
  readonly ready: number;
  /** Deliveries running now. */
  readonly inFlight: number;
  /** Copies waiting for a redelivery delay to pass. */
  readonly scheduled: number;
}

/**
 * Decides one delivery instead of an inbox: the broker's own tests script outcomes with it,
 * apart from any store. Its answers still go through `decide` / `decideOnThrow`.
 */
export type DeliveryProcessor = (envelope: Envelope) => Promise<InboxOutcome>;

/** Options of {@link MemoryBroker.consume} shared by both forms, named as in every transport. */
export interface ConsumeSettings<R = unknown> {
  /** Deliveries running at once. Default 1. */
  readonly concurrency?: number;
  /**
   * Where the message id is found: the `message-id` header (set from {@link MemoryMessage.id}),
   * then `extract`, then, when `fallback` (default true), the broker's own identity of the
   * message (`<queue>#<sequence>`, the same for every copy of one send).
   */
  readonly messageId?: MessageIdOptions<MemoryMessage>;
  /** Header holding the scope (tenant) when {@link MemoryMessage.scope} is absent. Default `tenant`. */
  readonly scopeHeader?: string;
  /** Called once per settled, held or released delivery; a throw is surfaced, never fatal. */
  readonly onSettled?: (event: SettledEvent<R, MemoryMessage>) => void;
}

/** Options of {@link MemoryBroker.consume}. Give `inbox` and `handler`, or `process`. */
export type ConsumeOptions<R = unknown> = ConsumeSettings<R> &
  (
    | {
        readonly inbox: Inbox;
        readonly handler: Handler<R>;
        readonly process?: never;
        /** Retry budget and circuit breakers, as on every transport (docs/load-shedding.md). */
        readonly resilience?: ResilienceOptions<Envelope>;
      }
    | {
        readonly process: DeliveryProcessor;
        readonly inbox?: never;
        readonly handler?: never;
        readonly resilience?: never;
      }
  );

/**
 * A consumer of one queue, with the lifecycle of every transport's consumer: created
 * stopped; `start()` once; `stop({ drain })` idempotent.
 */
export interface MemoryConsumer extends Consumer {
  readonly queue: string;
  /** Deliveries of this consumer running now (held ones included). */
  readonly inFlight: number;
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
 * - Outcomes go through the shared `decide` / `decideOnThrow`, as in every transport:
 *   `processed` and `duplicate` are acknowledged; `failed` comes back after `retryDelayMs`;
 *   `dead-lettered` goes to the queue's dead-letter list with the shared facts and is
 *   acknowledged; a store outage holds the delivery and retries it in process; any other
 *   throw gives it back (a crash).
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
  /**
   * A consumer of a queue, not started yet: call its `start()`. Several started consumers of
   * one queue compete for its messages.
   */
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
  /**
   * Stops every consumer (draining), drops pending redeliveries, and refuses further use.
   * Idempotent.
   */
  close(): Promise<void>;
}

// ---- Internal records, shared by the broker's files (not exported from the package). ----

/** {@link MemoryBrokerOptions} validated, with defaults applied. @internal */
export interface ResolvedBrokerOptions {
  readonly crashDelayMs: number;
  readonly maxRetryDelayMs: number;
  readonly maxReceiveCount: number;
}

/** One sent message and what the broker knows of it. @internal */
export interface StoredMessage {
  readonly queue: string;
  readonly message: MemoryMessage;
  /** The broker's own identity of the message, for the message-id fallback. */
  readonly brokerId: string;
  receiveCount: number;
  acked: boolean;
}

/** One copy waiting to be delivered. @internal */
export interface Ticket {
  readonly stored: StoredMessage;
  readonly kind: DeliveryKind;
}

/** Counters kept per queue. @internal */
export type Counter = Exclude<keyof BrokerStats, 'ready' | 'inFlight' | 'scheduled'>;

/** One queue. @internal */
export interface QueueState {
  readonly name: string;
  readonly ready: Ticket[];
  readonly consumers: ConsumerState[];
  readonly deadLetters: DeadLetteredMessage[];
  readonly counters: Record<Counter, number>;
  nextConsumer: number;
  inFlight: number;
  scheduled: number;
  /** Sends so far, for broker ids. */
  sent: number;
}

/** {@link ConsumeOptions} validated. @internal */
export interface ResolvedConsumeOptions<R = unknown> {
  readonly concurrency: number;
  /** The inbox's consumer name (the queue's name with `process`), for dead-letter facts. */
  readonly name: string;
  readonly process: (envelope: Envelope, signal: AbortSignal) => Promise<InboxOutcome<R>>;
  readonly messageId: ResolvedMessageId<MemoryMessage>;
  readonly scopeHeader: string;
  readonly onSettled: ((event: SettledEvent<R, MemoryMessage>) => void) | undefined;
}

/** One delivery running in a consumer. @internal */
export interface Delivery {
  readonly ticket: Ticket;
  readonly receiveCount: number;
  readonly envelope: Envelope;
  /** Given back by a stop: its outcome, when it comes, is ignored. */
  released: boolean;
  /** Ends a hold's wait early (a stop). */
  wake: (() => void) | undefined;
}

/** A started consumer. @internal */
export interface ConsumerState {
  readonly queue: QueueState;
  // The broker handles any R; the consumer's own hook was typed by its caller.
  readonly options: ResolvedConsumeOptions;
  readonly running: Map<Delivery, Promise<void>>;
  /** Aborted on a stop without drain: handlers see it as `ctx.signal`. */
  readonly abort: AbortController;
  stopped: boolean;
}

/** What the functions of one broker share. @internal */
export interface BrokerRuntime {
  readonly options: ResolvedBrokerOptions;
  readonly plan: FaultPlan;
  readonly queues: Map<string, QueueState>;
  readonly byId: Map<string, StoredMessage[]>;
  readonly timers: Set<NodeJS.Timeout>;
  readonly listeners: Set<(record: DeliveryRecord) => void>;
  readonly idleWaiters: Set<() => void>;
  readonly log: DeliveryRecord[];
  /** Every consumer made, so that `close` can stop them. */
  readonly consumers: Set<MemoryConsumer>;
  /**
   * Hands a ticket to a consumer (`memory-delivery.ts`). Carried here so that the queue's
   * pump can start deliveries without importing the module that settles them, which calls
   * back into the queue.
   */
  readonly startDelivery: (rt: BrokerRuntime, consumer: ConsumerState, ticket: Ticket) => void;
  closed: boolean;
}
