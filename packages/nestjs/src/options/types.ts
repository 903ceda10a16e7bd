import type {
  InboxOptions,
  OperationsOptions,
  OutboxOptions,
  RelayOptions,
  Store,
  StoreOptions,
  TransactionAdapter,
  UnknownTypePolicy,
} from '@justonce/core';
import type { ConsumeSettings, MemoryBroker } from '@justonce/core/testing';
import type { IdempotencyOptions } from '@justonce/http';
import type { KafkaConsumerOptions } from '@justonce/kafka';
import type { RabbitConsumerOptions } from '@justonce/rabbitmq';
import type { SqsConsumerOptions } from '@justonce/sqs';
import type { IncomingHttpHeaders } from 'node:http';

/** The transports an `@OnMessage` handler can name. */
export type TransportName = 'kafka' | 'rabbitmq' | 'sqs' | 'memory';

/**
 * Kafka settings shared by every Kafka consumer (`createKafkaConsumer`'s options without
 * the ones the module sets). `groupId` is the consumer name, and group, of the Kafka
 * handlers that name no `consumer`.
 */
export type KafkaSettings = Omit<
  KafkaConsumerOptions,
  'inbox' | 'handler' | 'topics' | 'groupId'
> & {
  readonly groupId?: string;
};

/** RabbitMQ settings shared by every RabbitMQ consumer (`createRabbitConsumer`'s options). */
export type RabbitSettings = Omit<RabbitConsumerOptions, 'inbox' | 'handler' | 'queue'>;

/** SQS settings shared by every SQS consumer (`createSqsConsumer`'s options). */
export type SqsSettings = Omit<SqsConsumerOptions, 'inbox' | 'handler' | 'queueUrl'>;

/**
 * The in-memory broker of `@justonce/core/testing`, for tests: handlers naming
 * `transport: 'memory'` consume its queues, and so do those of the transports in `replaces`
 * (their topic or queue names become queue names), so a test can run the application's
 * handlers with no broker.
 */
export type MemorySettings = Omit<ConsumeSettings, 'onSettled'> & {
  readonly broker: MemoryBroker;
  readonly replaces?: readonly Exclude<TransportName, 'memory'>[];
};

/** Connection settings per transport; a handler's transport must have its entry. */
export interface TransportSettings {
  readonly kafka?: KafkaSettings;
  readonly rabbitmq?: RabbitSettings;
  readonly sqs?: SqsSettings;
  readonly memory?: MemorySettings;
}

/** Inbox options every consumer gets (`createInbox`'s, without what the module sets). */
export type InboxSettings = Omit<InboxOptions, 'store' | 'consumer' | 'outbox'>;

/** Settings of one consumer, by its name, over the module-wide ones. */
export interface ConsumerSettings {
  /** Its inbox's options, over the module's `inbox`. */
  readonly inbox?: InboxSettings;
  /** What a message of a type none of its handlers takes does. Default `'dead-letter'`. */
  readonly unknownType?: UnknownTypePolicy;
  /** Over `transports.kafka`, when the consumer is a Kafka one. */
  readonly kafka?: Partial<KafkaSettings>;
  /** Over `transports.rabbitmq`, when the consumer is a RabbitMQ one. */
  readonly rabbitmq?: Partial<RabbitSettings>;
  /** Over `transports.sqs`, when the consumer is an SQS one. */
  readonly sqs?: Partial<SqsSettings>;
}

/** One relay the module runs: `createRelay`'s options without the store. */
export type RelaySettings = Omit<RelayOptions, 'store'>;

/** The operations options of the module's `Operations` (`createOperations`'s, without the store). */
export type OperationsSettings = Omit<OperationsOptions, 'store' | 'operation'>;

/**
 * The request an idempotent route's `scope` and `fingerprint` functions receive: what Nest's
 * Express and Fastify requests have in common. Name your platform's type as `Idempotent`'s
 * type argument for more.
 */
export interface IdempotentRequest {
  readonly method: string;
  readonly url: string;
  readonly headers: IncomingHttpHeaders;
}

/** Defaults of every `@Idempotent` route: `@justonce/http`'s options but the per-route ones. */
export type IdempotencyDefaults = Partial<
  Omit<IdempotencyOptions<IdempotentRequest>, 'operations' | 'store' | 'operation'>
>;

/** How the module ends its work when the application shuts down. */
export interface ShutdownSettings {
  /**
   * How long consumers wait for the deliveries in flight, and relays for their batches,
   * before giving them back. Default 30 000 ms.
   */
  readonly timeoutMs?: number;
}

/** Options of `JustonceModule.forRoot`, and what `forRootAsync`'s factory returns. */
export interface JustonceModuleOptions {
  /**
   * The store: `createStore`'s options (the module creates it, and closes it at shutdown),
   * or a `Store` you created (the module never closes it).
   */
  readonly store: StoreOptions | Store;
  /** Run `store.migrate()` when the module starts. Default `false`. */
  readonly migrate?: boolean;
  /**
   * The adapter of your ORM's transactions (`@justonce/core/kysely`, `/drizzle`, `/typeorm`,
   * `/pg`); handlers and outbox calls then take that library's transaction. Default: knex's,
   * on the store's knex.
   */
  readonly transactions?: TransactionAdapter<unknown>;
  /** Options of the outbox (`createOutbox`'s, without the store). */
  readonly outbox?: Omit<OutboxOptions, 'store'>;
  /** Options of every `Operations` the module creates. */
  readonly operations?: OperationsSettings;
  /** Defaults of every `@Idempotent` route (usually `scope`). */
  readonly idempotency?: IdempotencyDefaults;
  /** Inbox options of every consumer. */
  readonly inbox?: InboxSettings;
  /** Connection settings of the transports the `@OnMessage` handlers name. */
  readonly transports?: TransportSettings;
  /** Settings of single consumers, by consumer name. */
  readonly consumers?: Readonly<Record<string, ConsumerSettings>>;
  /**
   * Relays to run with the application: each publishes the outbox through its `publisher`.
   * The module closes each publisher after its relay stopped.
   */
  readonly relays?: readonly RelaySettings[];
  /** How work in flight ends at shutdown. */
  readonly shutdown?: ShutdownSettings;
}

/** Options of `JustonceModule.forRoot`. */
export interface JustonceRootOptions extends JustonceModuleOptions {
  /** Register the module globally, so every module can inject its providers. Default `true`. */
  readonly isGlobal?: boolean;
}
