import { errorMessage } from '@justonce/core/transport';
import type { Channel } from 'amqplib';
import { RabbitTopologyError } from '../../errors';

/** The queues and exchanges a consumer uses. */
export interface RabbitTopology {
  /** The queue consumed from. */
  readonly queue: string;
  /** The exchange dead letters are published to, with the queue name as routing key. */
  readonly deadLetterExchange: string;
  /** The queue bound to the dead-letter exchange, or `null` when none is declared. */
  readonly deadLetterQueue: string | null;
  /** The retry queues used so far (declared on first use), e.g. `orders.retry.1000ms`. */
  readonly retryQueues: readonly string[];
}

/** What {@link declareTopology} needs. @internal */
export interface TopologySettings {
  readonly queue: string;
  readonly declare: boolean;
  readonly durable: boolean;
  readonly queueArguments: Readonly<Record<string, unknown>>;
  readonly deadLetterExchange: string;
  readonly deadLetterExchangeType: string;
  readonly deadLetterQueue: string | null;
}

/** The name of the retry queue with the given delay. @internal */
export function retryQueueName(queue: string, delayMs: number): string {
  return `${queue}.retry.${delayMs}ms`;
}

/**
 * Declares (or, with `declare: false`, checks) the consumed queue, the dead-letter exchange
 * and the dead-letter queue bound to it with the consumed queue's name as routing key.
 * @internal
 */
export async function declareTopology(channel: Channel, t: TopologySettings): Promise<void> {
  await topologyStep(`queue "${t.queue}"`, async () => {
    if (t.declare) {
      await channel.assertQueue(t.queue, { durable: t.durable, arguments: t.queueArguments });
    } else await channel.checkQueue(t.queue);
  });
  await topologyStep(`dead-letter exchange "${t.deadLetterExchange}"`, async () => {
    if (t.declare) {
      await channel.assertExchange(t.deadLetterExchange, t.deadLetterExchangeType, {
        durable: t.durable,
      });
    } else await channel.checkExchange(t.deadLetterExchange);
  });
  const dlq = t.deadLetterQueue;
  if (dlq !== null) {
    await topologyStep(`dead-letter queue "${dlq}"`, async () => {
      if (t.declare) {
        await channel.assertQueue(dlq, { durable: t.durable });
        await channel.bindQueue(dlq, t.deadLetterExchange, t.queue);
      } else await channel.checkQueue(dlq);
    });
  }
}

/**
 * Declares (or checks) the retry queue of one delay: a queue with that message TTL whose
 * expired messages are dead-lettered through the default exchange back to the consumed
 * queue. Its messages all share one TTL, so they expire in the order they entered.
 * @internal
 */
export async function declareRetryQueue(
  channel: Channel,
  t: TopologySettings,
  delayMs: number,
): Promise<string> {
  const name = retryQueueName(t.queue, delayMs);
  await topologyStep(`retry queue "${name}"`, async () => {
    if (t.declare) {
      await channel.assertQueue(name, {
        durable: t.durable,
        arguments: {
          'x-message-ttl': delayMs,
          'x-dead-letter-exchange': '',
          'x-dead-letter-routing-key': t.queue,
        },
      });
    } else await channel.checkQueue(name);
  });
  return name;
}

async function topologyStep(what: string, step: () => Promise<void>): Promise<void> {
  try {
    await step();
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    // 404 NOT_FOUND and 406 PRECONDITION_FAILED need a change; anything else is the connection.
    if (code === 404 || code === 406) {
      throw new RabbitTopologyError(`cannot declare ${what}: ${errorMessage(error)}`, {
        cause: error,
        details: { replyCode: code },
      });
    }
    throw error;
  }
}
