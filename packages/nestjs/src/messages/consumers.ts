import { errorMessage } from '@justonce/core/transport';
import {
  ConfigurationError,
  createInbox,
  messageHandler,
  on,
  type Handler,
  type Inbox,
  type InboxOptions,
  type MessageRoute,
  type Outbox,
  type Store,
} from '@justonce/core';
import type { Consumer, ConsumerStopOptions } from '@justonce/core/transport';
import type { ModuleConfig } from '../options/resolve';
import type { TransportName } from '../options/types';
import type { ConsumerPlan, FoundHandler } from './plan';

/** A consumer the module runs: its inbox and the transport's consumers (one per queue). */
export interface ModuleConsumer {
  /** The consumer name: the inbox's dedup namespace (and the Kafka group). */
  readonly name: string;
  /** The transport it runs on. */
  readonly transport: TransportName;
  /** Its topics (Kafka) or queues. */
  readonly sources: readonly string[];
  readonly inbox: Inbox;
  /** The transport's consumers: one, or one per queue on the memory broker. */
  readonly consumers: readonly Consumer[];
}

/** What creating a consumer needs. @internal */
export interface ConsumerDeps {
  readonly store: Store;
  readonly outbox: Outbox;
  readonly config: ModuleConfig;
}

/**
 * Creates the inbox, the handler and the transport's consumer of a plan (not started). The
 * transport package is loaded here, so only the transports in use need to be installed.
 * @internal
 */
export async function createModuleConsumer(
  plan: ConsumerPlan,
  deps: ConsumerDeps,
): Promise<ModuleConsumer> {
  const { options, seam } = deps.config;
  const own = options.consumers?.[plan.name] ?? {};
  // Spread, not listed: `transactions` is passed only when given (the seam of issue #27).
  const inboxOptions = {
    ...options.inbox,
    ...own.inbox,
    ...seam,
    store: deps.store,
    consumer: plan.name,
    outbox: deps.outbox,
  };
  const inbox = createInbox(inboxOptions as InboxOptions);
  const routes = plan.handlers.map(route);
  let handler: Handler;
  try {
    handler = messageHandler({
      routes,
      ...(own.unknownType === undefined ? {} : { unknownType: own.unknownType }),
    });
  } catch (error) {
    // Two handlers of one type in a consumer, or a bad unknownType: name the consumer.
    throw new ConfigurationError(`consumer "${plan.name}": ${errorMessage(error)}`, {
      consumer: plan.name,
      handlers: plan.handlers.map((each) => each.where),
    });
  }
  const consumers = await transportConsumers(plan, inbox, handler, deps.config);
  return { name: plan.name, transport: plan.transport, sources: plan.sources, inbox, consumers };
}

async function transportConsumers(
  plan: ConsumerPlan,
  inbox: Inbox,
  handler: Handler,
  config: ModuleConfig,
): Promise<Consumer[]> {
  const transports = config.options.transports ?? {};
  const own = config.options.consumers?.[plan.name] ?? {};
  const [source = ''] = plan.sources;
  switch (plan.transport) {
    case 'kafka': {
      const { createKafkaConsumer } = await load('kafka', () => import('@justonce/kafka'));
      const { groupId: _default, ...kafka } = { ...transports.kafka, ...own.kafka };
      return [
        createKafkaConsumer({ ...kafka, groupId: plan.name, topics: plan.sources, inbox, handler }),
      ];
    }
    case 'rabbitmq': {
      const { createRabbitConsumer } = await load('rabbitmq', () => import('@justonce/rabbitmq'));
      const rabbit = { ...transports.rabbitmq, ...own.rabbitmq };
      return [createRabbitConsumer({ ...rabbit, queue: source, inbox, handler })];
    }
    case 'sqs': {
      const { createSqsConsumer } = await load('sqs', () => import('@justonce/sqs'));
      const sqs = { ...transports.sqs, ...own.sqs };
      return [createSqsConsumer({ ...sqs, queueUrl: source, inbox, handler })];
    }
    case 'memory': {
      const memory = transports.memory;
      if (memory === undefined)
        throw new ConfigurationError('JustonceModule has no transports.memory');
      const { broker, replaces: _replaces, ...settings } = memory;
      return plan.sources.map((queue) => broker.consume(queue, { ...settings, inbox, handler }));
    }
  }
}

/** The route of one handler: its message type, calling its method on its instance. */
function route(handler: FoundHandler): MessageRoute {
  const method = (handler.instance as Record<string, unknown>)[handler.method];
  try {
    return on(handler.message, (data, ctx) =>
      (method as (data: unknown, ctx: unknown) => Promise<unknown>).call(
        handler.instance,
        data,
        ctx,
      ),
    );
  } catch (error) {
    throw new ConfigurationError(`@OnMessage on ${handler.where}: ${errorMessage(error)}`);
  }
}

async function load<T>(transport: string, loader: () => Promise<T>): Promise<T> {
  try {
    return await loader();
  } catch (error) {
    throw new ConfigurationError(
      `the ${transport} transport needs the @justonce/${transport} package: install it`,
      { transport, error: errorMessage(error) },
    );
  }
}

/** Starts every consumer of `consumer`. @internal */
export async function startModuleConsumer(consumer: ModuleConsumer): Promise<void> {
  await Promise.all(consumer.consumers.map((each) => each.start()));
}

/** Stops every consumer of `consumer`; resolves to the errors they threw. @internal */
export async function stopModuleConsumer(
  consumer: ModuleConsumer,
  options: ConsumerStopOptions,
): Promise<unknown[]> {
  const results = await Promise.allSettled(consumer.consumers.map((each) => each.stop(options)));
  return results.flatMap((result) => (result.status === 'rejected' ? [result.reason] : []));
}
