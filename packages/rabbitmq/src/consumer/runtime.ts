import {
  resolveMeter,
  type SettleAction,
  type SettledEvent,
  errorMessage,
} from '@justonce/core/transport';
import type { ConsumeMessage } from 'amqplib';
import type { AmqpSession } from '../client/connection';
import type { ConfirmedPublisher } from '../client/confirmed-publisher';
import { OutageLog } from '../outage/outage-log';
import type { RabbitConnectionEvent } from './types';
import type { ResolvedConsumerOptions } from './options';
import { WorkQueue } from './work-queue';

/** One open connection and channel, with what belongs to it. @internal */
export interface Live {
  readonly session: AmqpSession;
  readonly publisher: ConfirmedPublisher;
  readonly retryQueues: Map<number, Promise<string>>;
  /** Aborted when this channel is lost: its deliveries went stale (`ctx.signal`). */
  readonly abort: AbortController;
  consumerTag?: string;
}

/** One delivery, on the channel it came on. @internal */
export interface Delivery {
  readonly live: Live;
  readonly message: ConsumeMessage;
  /** Its message id, once found (for the `released` event of a stop). */
  messageId?: string | undefined;
  /**
   * Given back to the broker (nacked by a stop, or left to the broker with its lost channel)
   * and reported `released`: nothing more may be sent for it, since an ack or nack of a
   * settled delivery tag closes the channel.
   */
  released: boolean;
}

/** What a running consumer holds, passed to the functions of its sibling files. @internal */
export interface ConsumerRuntime<R> {
  readonly options: ResolvedConsumerOptions<R>;
  readonly work: WorkQueue<Delivery>;
  /** Deliveries the inbox is working on (taken off `work`), for a stop without drain. */
  readonly inFlight: Set<Delivery>;
  /** Aborted when `stop` begins: no more reconnecting, held deliveries are released. */
  readonly stopping: AbortController;
  readonly declaredRetryQueues: Set<string>;
  readonly brokerOutage: OutageLog;
  readonly storeOutage: OutageLog;
  readonly deliveries: { add(value: number, attributes: Record<string, string>): void };
  readonly reconnects: { add(value: number, attributes: Record<string, string>): void };
  /** The live connection while consuming. */
  current: Live | undefined;
  /**
   * Set while the consumer's circuit breaker is open: the broker consumer is cancelled and
   * not consumed again (by a reconnect either) until the breaker lets its probe through.
   */
  intakePaused: boolean;
  /** Ends the resilience layer's driving of the intake (at stop). */
  undrive: () => void;
  /** Pause and resume, one after the other: a cancel must not race the consume after it. */
  intakeTurn: Promise<void>;
  /**
   * Inbox calls in a row that threw something other than a store outage; the wait before
   * such a delivery goes back to the queue grows with it. Reset by any answer of the inbox.
   */
  inboxThrows: number;
}

/**
 * Builds the runtime record; `handle` runs the deliveries the work queue hands over together
 * (one in message mode, up to `batchSize` in batch mode). @internal
 */
export function createRuntime<R>(
  options: ResolvedConsumerOptions<R>,
  handle: (rt: ConsumerRuntime<R>, deliveries: readonly Delivery[]) => Promise<void>,
): ConsumerRuntime<R> {
  const { logger, queue } = options;
  const meter = resolveMeter(options.meter);
  const rt: ConsumerRuntime<R> = {
    options,
    work: new WorkQueue<Delivery>(
      options.concurrency,
      async (deliveries) => {
        for (const d of deliveries) rt.inFlight.add(d);
        try {
          await handle(rt, deliveries);
        } finally {
          for (const d of deliveries) rt.inFlight.delete(d);
        }
      },
      { size: options.batchSize, waitMs: options.batchWaitMs },
    ),
    inFlight: new Set(),
    stopping: new AbortController(),
    declaredRetryQueues: new Set(),
    brokerOutage: new OutageLog(
      logger,
      {
        down: 'rabbitmq consumer lost its connection; reconnecting',
        up: 'rabbitmq consumer reconnected',
      },
      { queue },
    ),
    storeOutage: new OutageLog(
      logger,
      {
        down: 'rabbitmq consumer: the store is unavailable; holding deliveries unacknowledged and retrying',
        up: 'rabbitmq consumer: the store answers again',
      },
      { queue },
    ),
    deliveries: meter.createCounter('justonce.rabbitmq.deliveries', {
      description: 'Deliveries settled by the RabbitMQ consumer, by action',
    }),
    reconnects: meter.createCounter('justonce.rabbitmq.reconnects', {
      description: 'Connections or channels the RabbitMQ consumer lost and reopened',
    }),
    current: undefined,
    intakePaused: false,
    undrive: () => undefined,
    intakeTurn: Promise.resolve(),
    inboxThrows: 0,
  };
  return rt;
}

/** Counts and reports what was done with a delivery; a throwing hook is logged, not thrown. @internal */
export function settled<R>(
  rt: ConsumerRuntime<R>,
  d: Delivery,
  messageId: string | undefined,
  action: SettleAction,
  extra: Omit<SettledEvent<R, ConsumeMessage>, 'action' | 'messageId' | 'message'> = {},
): void {
  rt.deliveries.add(1, { queue: rt.options.queue, action });
  const hook = rt.options.onSettled;
  if (!hook) return;
  try {
    hook({ action, messageId, message: d.message, ...extra });
  } catch (error) {
    rt.options.logger.warn('rabbitmq consumer onSettled threw', { error: errorMessage(error) });
  }
}

/** Reports a connection event; a throwing hook is logged, not thrown. @internal */
export function connectionEvent<R>(rt: ConsumerRuntime<R>, event: RabbitConnectionEvent): void {
  const hook = rt.options.onConnection;
  if (!hook) return;
  try {
    hook(event);
  } catch (error) {
    rt.options.logger.warn('rabbitmq consumer onConnection threw', { error: errorMessage(error) });
  }
}
