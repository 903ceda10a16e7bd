import type { Handler, Inbox, InboxDedupMode } from '../inbox/types';
import type { ResilienceOptions } from '../resilience/types';
import type { Envelope } from '../transport/envelope';
import type { Logger } from '../observability/logger';
import type { Store } from '../store/store';
import type { Consumer, SettledEvent } from '../consumer';
import type { Publisher } from '../transport/publisher';
import type { ContractCheck } from './publisher-contract';

/** A message the contract sends, in neutral terms; the test maps it to its broker's message. */
export interface ContractMessage {
  /** Sent in the `message-id` header; absent means the message has no id. */
  readonly id?: string;
  /** The body, as text. */
  readonly body: string;
  /** Further headers. */
  readonly headers?: Readonly<Record<string, string>>;
  /** Partition key (a Kafka key, a message group), when the broker has them. */
  readonly key?: string;
}

/** What the contract asks of the consumer; the test maps it to its consumer's options. */
export interface ContractConsumerSettings {
  /** The inbox: pass as the consumer's `inbox`. */
  readonly inbox: Inbox;
  /** The handler: pass as the consumer's `handler`. */
  readonly handler: Handler;
  /** Pass as the consumer's `onSettled`. */
  readonly onSettled: (event: SettledEvent) => void;
  /**
   * The consumer's `messageId` option. `extract` reads the body text; the transport maps it
   * onto its own message type: `extract: (m) => settings.messageId.extract?.(bodyTextOf(m))`.
   */
  readonly messageId: {
    readonly extract?: (bodyText: string) => string | undefined;
    readonly fallback: boolean;
  };
  /** The consumer's `concurrency`, when the clause needs more than one at a time. */
  readonly concurrency?: number;
  /** Pass as the consumer's `resilience` option when present (the `resilience` clause). */
  readonly resilience?: ResilienceOptions<Envelope>;
  /**
   * Pass as the consumer's `logger` when present: the restart and partition clauses read
   * what the consumer said (see {@link PartitionFeature.noticeMs}).
   */
  readonly logger?: Logger;
}

/**
 * A way to stop the broker under test and start it again, for the `restart` clause: it runs a
 * load (events added through the outbox at a steady rate, a relay publishing them through
 * {@link ConsumerContractOptions.createPublisher}, the consumer handling them) and stops the
 * broker in the middle of it. Use a broker of the test's own: other tests' clients see it go.
 */
export interface RestartFeature {
  /** Stops the broker (a SIGKILL, `rabbitmqctl stop_app`…); resolves once it is down. */
  stop(): Promise<void>;
  /**
   * Starts it again, with whatever a deployment provisions at start (queues that lived in
   * memory only, say); resolves once clients can use it.
   */
  start(): Promise<void>;
  /**
   * Whether the broker answers now; polled while `start` runs, so recovery is measured from
   * the broker's first answer. Absent: from the moment `start` resolves.
   */
  isUp?(): Promise<boolean>;
  /** How long the broker stays down between `stop` and `start`. Default 0. */
  readonly downMs?: number;
  /**
   * The broker comes back without the messages it held (queues in memory, a disk wiped): the
   * clause then accepts that messages it accepted before the stop and nobody handled are
   * missing, and nothing else. Default false: nothing may be missing.
   */
  readonly losesMessages?: boolean;
  /** Bound on the first publish and the first handling after the broker answers. Default 30 000 ms. */
  readonly recoveryMs?: number;
}

/** One line the consumer, the publisher or the relay logged during a fault clause. */
export interface ContractLogLine {
  /** When it was written (ms since the epoch). */
  readonly at: number;
  readonly level: 'info' | 'warn' | 'error';
  readonly message: string;
  readonly fields: Readonly<Record<string, unknown>>;
}

/** What the consumer, the publisher and the relay logged around a partition. */
export interface PartitionLogs {
  /** When the cut began and when the heal began (ms since the epoch). */
  readonly cutAt: number;
  readonly healedAt: number;
  readonly consumer: readonly ContractLogLine[];
  readonly publisher: readonly ContractLogLine[];
  readonly relay: readonly ContractLogLine[];
}

/**
 * A way to cut the network between the clients and the broker and heal it, for the
 * `partition` clause: the same load as the restart clause, with the broker unreachable (packets
 * dropped, connections left half open) for {@link PartitionFeature.cutMs} in the middle of it.
 */
export interface PartitionFeature {
  /** Cuts every connection to the broker, old and new; resolves once it is cut. */
  cut(): Promise<void>;
  /** Heals the cut. */
  heal(): Promise<void>;
  /** How long the cut lasts: longer than every time limit the consumer and publisher were given. */
  readonly cutMs: number;
  /**
   * Bounds, from the cut, on the first warning (or error) the consumer and the publisher log:
   * each must say within its time limits that it cannot reach the broker. Absent: not checked.
   */
  readonly noticeMs?: { readonly consumer?: number; readonly publisher?: number };
  /** Bound on the first publish and the first handling after the heal. Default 8 000 ms. */
  readonly recoveryMs?: number;
  /**
   * The transport's own checks of what was logged (its wording, once per outage…): returns a
   * problem, or `undefined` when the logs are right.
   */
  checkLogs?(logs: PartitionLogs): string | undefined;
}

/** What the broker under test does, which changes what some clauses send or expect. */
export interface ConsumerFeatures {
  /**
   * One key's messages are delivered one after the other (a Kafka partition, a FIFO group):
   * the concurrent-delivery clause then sends its two copies under two keys.
   */
  readonly ordersByKey?: boolean;
  /** Deliveries carry `receiveCount`: the poison clause then checks it grows 1, 2, 3… */
  readonly reportsReceiveCount?: boolean;
  /** The consumer hands batches to `processBatch`: the drain clause then drains two at once. */
  readonly batchMode?: boolean;
  /** Stops and starts the broker: the `restart` clause runs (else it is skipped). */
  readonly restart?: RestartFeature;
  /** Cuts and heals the network to the broker: the `partition` clause runs (else it is skipped). */
  readonly partition?: PartitionFeature;
}

/** Options of {@link checkConsumerContract}. */
export interface ConsumerContractOptions {
  /** A migrated store; the contract creates its `contract_effects` table in its schema. */
  readonly store: Store;
  /** A new, empty destination (topic, queue) the consumer reads and `send` writes to. */
  readonly newDestination: () => Promise<string>;
  /** Sends messages to a destination, in order. */
  readonly send: (destination: string, messages: readonly ContractMessage[]) => Promise<void>;
  /** The transport's consumer of `destination`, not started, built from `settings`. */
  readonly createConsumer: (destination: string, settings: ContractConsumerSettings) => Consumer;
  /**
   * The transport's publisher, writing to the broker under test with `logger` as its logger:
   * the restart and partition clauses' relay publishes through it. Needed with those features.
   */
  readonly createPublisher?: (logger: Logger) => Publisher;
  /** What the broker does; see {@link ConsumerFeatures}. Default: none of them. */
  readonly features?: ConsumerFeatures;
  /** How long a clause waits for what it expects. Default 15 000 ms. */
  readonly timeoutMs?: number;
  /**
   * The inboxes' `dedup` mode, for a transport whose deliveries carry a position (Kafka).
   * Default `'ids'`. With `'watermark'`, the clauses that send one id twice (`duplicate`,
   * `concurrent`, `extract`) are skipped: that mode by design does not catch a producer's
   * copies at other offsets.
   */
  readonly dedup?: InboxDedupMode;
}

/** The clauses, as {@link ContractCheck.clause} names them, in the order they are reported. */
export const CONSUMER_CONTRACT_CLAUSES = {
  duplicate: 'a duplicate message id takes effect once; both copies are acked',
  concurrent: 'two concurrent deliveries of one id take effect once',
  redelivery: 'a failure is redelivered after its delay, then acked',
  poison: 'a poison message is dead-lettered after maxAttempts with the shared facts, no effect',
  badInput: 'a message without an id and one with an undecodable body are dead-lettered, not lost',
  extract: 'messageId.extract is honoured: an id from the body deduplicates',
  outage: 'a failing store means no ack: the delivery is held, then acked once',
  drain: 'a graceful stop lets in-flight work commit and be acked before it resolves',
  lifecycle: 'start twice and start after stop reject with ConsumerStateError; stop twice resolves',
  resilience:
    'a downstream failing for a while: the breaker holds deliveries, handler calls stay bounded, nothing dead-lettered or lost, flow resumes by itself',
  restart:
    'a broker stopped and started under load: nothing lost, doubled, dead or charged; flow resumes within the bound',
  partition:
    'a network cut to the broker under load: noticed in time, nothing lost, doubled, dead or charged; flow resumes after the heal',
} as const;

/**
 * A clause's result: a {@link ContractCheck}, with why it was skipped (a feature it needs was
 * not given) and, for the fault clauses, the figures measured.
 */
export interface ConsumerContractCheck extends ContractCheck {
  /** Why the clause did not run; it is then `ok`. */
  readonly skipped?: string;
  /** What the clause measured (counts, ms from the fault to notice and to recovery). */
  readonly figures?: Readonly<Record<string, unknown>>;
  /** How long the clause took, in ms (0 when skipped). */
  readonly durationMs: number;
}

/** A clause's key in {@link CONSUMER_CONTRACT_CLAUSES}. @internal */
export type ClauseName = keyof typeof CONSUMER_CONTRACT_CLAUSES;
