import { ConfigurationError } from '@justonce/core';
import { optionKeys, rejectUnknownOptions } from '@justonce/core/transport';
import type { TransportName, TransportSettings } from '../options/types';
import type { OnMessageEntry, OnMessageOptions } from './on-message';

/** One `@OnMessage` found on a provider's method. @internal */
export interface FoundHandler extends OnMessageEntry {
  readonly instance: object;
  readonly method: string;
  /** `Class.method`, for messages. */
  readonly where: string;
}

/** One consumer to create: a name, a transport, its topics or queues, its handlers. @internal */
export interface ConsumerPlan {
  /** The consumer name: the inbox's dedup namespace (and the Kafka group). */
  readonly name: string;
  /** The transport it runs on (`memory` when the memory broker replaces the named one). */
  readonly transport: TransportName;
  /** The transport the handlers named, for its per-consumer settings. */
  readonly named: TransportName;
  /** Topics (Kafka) or queues; one, except for a Kafka consumer of several topics. */
  readonly sources: readonly string[];
  readonly handlers: readonly FoundHandler[];
}

const TRANSPORTS: readonly TransportName[] = ['kafka', 'rabbitmq', 'sqs', 'memory'];
const KAFKA_KEYS = optionKeys<Extract<OnMessageOptions, { transport: 'kafka' }>>()([
  'transport',
  'topic',
  'consumer',
]);
const QUEUE_KEYS = optionKeys<Exclude<OnMessageOptions, { transport: 'kafka' }>>()([
  'transport',
  'queue',
  'consumer',
]);

/**
 * Groups the handlers into consumers: on RabbitMQ, SQS and the memory broker one consumer
 * per queue (its handlers must agree on the consumer name); on Kafka one per consumer name,
 * subscribed to all its handlers' topics (kafkajs expects every member of a group to
 * subscribe to the same topics). Consumer names are unique across transports: each is an
 * inbox's dedup namespace. @internal
 */
export function planConsumers(
  handlers: readonly FoundHandler[],
  transports: TransportSettings,
): ConsumerPlan[] {
  const plans = new Map<string, { plan: ConsumerPlan; where: string }>();
  for (const handler of handlers) {
    const source = sourceOf(handler);
    const named = handler.options.transport;
    const replaced = (transports.memory?.replaces as readonly string[] | undefined)?.includes(
      named,
    );
    const transport = replaced === true ? 'memory' : named;
    if (transports[transport] === undefined) {
      throw new ConfigurationError(
        `@OnMessage on ${handler.where} uses the ${transport} transport, but JustonceModule has no transports.${transport}`,
        { transport },
      );
    }
    const name = handler.options.consumer ?? defaultName(named, source, transports);
    checkName(name, handler.where);
    const key = named === 'kafka' ? `kafka\0${name}` : `${named}\0${source}`;
    const known = plans.get(key);
    if (known === undefined) {
      const plan = { name, transport, named, sources: [source], handlers: [handler] };
      plans.set(key, { plan, where: handler.where });
      continue;
    }
    if (known.plan.name !== name) {
      throw new ConfigurationError(
        `@OnMessage on ${handler.where} and on ${known.where} consume ${named} queue "${source}" under two consumer names ("${name}", "${known.plan.name}"); one queue is one consumer`,
        { queue: source },
      );
    }
    const sources = known.plan.sources.includes(source)
      ? known.plan.sources
      : [...known.plan.sources, source];
    known.plan = { ...known.plan, sources, handlers: [...known.plan.handlers, handler] };
  }
  const list = [...plans.values()];
  const names = new Map<string, string>();
  for (const { plan, where } of list) {
    const other = names.get(plan.name);
    if (other !== undefined) {
      throw new ConfigurationError(
        `@OnMessage on ${where} and on ${other} are two consumers named "${plan.name}"; give each consumer its own name (it is its inbox's dedup namespace)`,
        { consumer: plan.name },
      );
    }
    names.set(plan.name, where);
  }
  return list.map((entry) => entry.plan);
}

/** The topic or queue of a handler, its options checked. */
function sourceOf(handler: FoundHandler): string {
  const options: unknown = handler.options;
  const transport = (options as { transport?: unknown } | null)?.transport;
  const context = `@OnMessage on ${handler.where}`;
  if (!TRANSPORTS.includes(transport as TransportName)) {
    throw new ConfigurationError(`${context}: transport must be one of ${TRANSPORTS.join(', ')}`, {
      transport: typeof transport === 'string' ? transport.slice(0, 50) : typeof transport,
    });
  }
  rejectUnknownOptions(options, transport === 'kafka' ? KAFKA_KEYS : QUEUE_KEYS, context);
  const field = transport === 'kafka' ? 'topic' : 'queue';
  const source = (options as Record<string, unknown>)[field];
  if (typeof source !== 'string' || source === '') {
    throw new ConfigurationError(`${context}: ${field} must be a non-empty string`, {
      [field]: typeof source,
    });
  }
  return source;
}

/** A consumer's name when its handlers give none: the Kafka group, else the queue's name. */
function defaultName(named: TransportName, source: string, transports: TransportSettings): string {
  if (named === 'kafka') return transports.kafka?.groupId ?? source;
  // An SQS queue URL ends with the queue's name.
  if (named === 'sqs') return source.slice(source.lastIndexOf('/') + 1) || source;
  return source;
}

function checkName(name: unknown, where: string): void {
  if (typeof name !== 'string' || name === '' || name.length > 200) {
    throw new ConfigurationError(
      `@OnMessage on ${where}: consumer must be a string of 1 to 200 characters`,
      { consumer: typeof name },
    );
  }
}
