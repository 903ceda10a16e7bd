import type { HandlerContext, MessageData, MessageType } from '@justonce/core';

/**
 * What an `@OnMessage` method receives second: the inbox's context (`trx`, `outbox`,
 * `messageId`, `attempt`, `signal`, …), core's `HandlerContext`, with `trx` typed as `Tx`:
 * the transaction of the module's `transactions` adapter (default knex's,
 * `Knex.Transaction`). Name your adapter's, e.g. `MessageContext<Transaction<DB>>` for
 * Kysely: the decorator cannot know which adapter the module was given.
 */
export type MessageContext<Tx = HandlerContext['trx']> = HandlerContext<Tx>;

/** Where an `@OnMessage` handler's messages come from. */
export type OnMessageOptions =
  | {
      readonly transport: 'kafka';
      /** The topic. */
      readonly topic: string;
      /**
       * The consumer name (the inbox's dedup namespace) and Kafka consumer group. Default
       * `transports.kafka.groupId`, else the topic. Kafka handlers of one name are one
       * consumer of all their topics.
       */
      readonly consumer?: string;
    }
  | {
      readonly transport: 'rabbitmq' | 'sqs' | 'memory';
      /** The queue: its name (RabbitMQ, memory) or URL (SQS). */
      readonly queue: string;
      /** The consumer name (the inbox's dedup namespace). Default the queue's name. */
      readonly consumer?: string;
    };

/**
 * A method `@OnMessage(M)` may decorate: it takes `M`'s data, and a {@link MessageContext} of
 * any transaction type (`never` here accepts each), and returns a promise.
 */
export type MessageMethod<M extends MessageType> = (
  data: MessageData<M>,
  ctx: MessageContext<never>,
) => Promise<unknown>;

/** One `@OnMessage` of a method, as its metadata keeps it. @internal */
export interface OnMessageEntry {
  readonly message: MessageType;
  readonly options: OnMessageOptions;
}

/** The metadata key of a method's `@OnMessage` entries. @internal */
export const ON_MESSAGE_METADATA = 'justonce:on-message';

/**
 * Makes a method of a provider the handler of a message type (from `defineMessage`) on a
 * topic or queue. At bootstrap the module finds every such method and starts one consumer
 * per queue (per consumer name on Kafka) with an inbox and a `messageHandler` routing each
 * delivery by its `type` header; the method gets the payload validated by the type's schema
 * and the inbox's context, and its writes through `ctx.trx` commit with the message's dedup
 * record, or not at all.
 *
 * ```ts
 * @Injectable()
 * class Billing {
 *   @OnMessage(OrderPlaced, { transport: 'rabbitmq', queue: 'orders' })
 *   async onOrder(order: MessageData<typeof OrderPlaced>, { trx }: MessageContext) {
 *     await trx('invoices').insert({ order_id: order.id });
 *   }
 * }
 * ```
 *
 * The provider must be a singleton (the default scope). A method may carry several
 * `@OnMessage`; one consumer takes each message type once.
 */
export function OnMessage<M extends MessageType>(
  message: M,
  options: OnMessageOptions,
): <F extends MessageMethod<M>>(
  target: object,
  key: string | symbol,
  descriptor: TypedPropertyDescriptor<F>,
) => void {
  return (_target, _key, descriptor) => {
    const method = descriptor.value;
    if (method === undefined) return;
    const entries = (Reflect.getMetadata(ON_MESSAGE_METADATA, method) ?? []) as OnMessageEntry[];
    Reflect.defineMetadata(ON_MESSAGE_METADATA, [...entries, { message, options }], method);
  };
}

/** The `@OnMessage` entries of a method. @internal */
export function onMessageEntries(method: unknown): readonly OnMessageEntry[] {
  if (typeof method !== 'function') return [];
  return (Reflect.getMetadata(ON_MESSAGE_METADATA, method) ?? []) as OnMessageEntry[];
}
