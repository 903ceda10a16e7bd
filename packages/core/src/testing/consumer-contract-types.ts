import type { Handler, Inbox } from '../inbox/types';
import type { Store } from '../store/store';
import type { Consumer, SettledEvent } from '../consumer';

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
  /** What the broker does; see {@link ConsumerFeatures}. Default: none of them. */
  readonly features?: ConsumerFeatures;
  /** How long a clause waits for what it expects. Default 15 000 ms. */
  readonly timeoutMs?: number;
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
} as const;

/** A clause's key in {@link CONSUMER_CONTRACT_CLAUSES}. @internal */
export type ClauseName = keyof typeof CONSUMER_CONTRACT_CLAUSES;
