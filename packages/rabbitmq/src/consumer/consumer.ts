import type { KnexTransaction } from '@justonce/core';
import {
  consumerLifecycle,
  type Consumer,
  type ConsumerStopOptions,
  finishesWithin,
} from '@justonce/core/transport';
import { handleDeliveries } from './deliver';
import { resolveConsumerOptions, type RabbitConsumerOptions } from './options';
import { connectionEvent, createRuntime, type ConsumerRuntime } from './runtime';
import { connectOnce } from './session';
import { release, releaseUnstarted } from './settle';
import type { RabbitTopology } from './topology';

/** A RabbitMQ consumer with an inbox: the shared {@link Consumer} lifecycle, plus broker facts. */
export interface RabbitConsumer extends Consumer {
  /**
   * Connects, declares the topology, and starts consuming. Rejects when the first
   * connection or the topology fails (a {@link RabbitConnectionError} or
   * {@link RabbitTopologyError}), leaving the consumer stopped; after that, lost connections
   * are reopened automatically. A second call, or one after `stop`, rejects with
   * `ConsumerStateError` (`CONSUMER_STATE`).
   */
  start(): Promise<void>;
  /**
   * Stops taking deliveries and returns the ones not started to the queue (`released`). With
   * `drain` (default) waits for running handlers (at most `timeoutMs`, default 30 000), then
   * gives back what still runs; with `drain: false` gives running deliveries back at once.
   * Then closes the connection. Idempotent; a stopped consumer cannot be started again.
   */
  stop(options?: ConsumerStopOptions): Promise<void>;
  /** True while a channel is open and consuming. */
  readonly connected: boolean;
  /** The queues and exchanges this consumer uses. */
  topology(): RabbitTopology;
}

/**
 * Consumes a RabbitMQ queue through the inbox: one effect per message id however often the
 * broker delivers it.
 *
 * Each delivery is acknowledged only after the inbox's transaction commits (processed) or
 * the inbox reports a duplicate. What happens next is core's `decide`: a failed attempt is
 * copied to a retry queue with a message TTL that dead-letters back into the queue
 * (confirmed before the original is acknowledged), so waiting never blocks the channel; a
 * message the inbox dead-letters (too many attempts, no id, undecodable body, …) is copied
 * to the dead-letter exchange with core's `x-justonce-*` dead-letter headers, then
 * acknowledged; a store outage holds the delivery unacknowledged. A lost connection or
 * channel is reopened with full-jitter backoff; unacknowledged deliveries come back from the
 * broker (those not started yet are reported `released`, as at a stop) and the inbox answers
 * the ones already committed as duplicates. With
 * `mode: 'batch'` the deliveries waiting together go through one `processBatch` transaction,
 * then each is settled as above.
 */
export function createRabbitConsumer<R = unknown, Tx = KnexTransaction>(
  options: RabbitConsumerOptions<R, Tx>,
): RabbitConsumer {
  // The consumer never touches the transaction: the inbox and the handler agree on Tx.
  const resolved = resolveConsumerOptions(options as unknown as RabbitConsumerOptions<R>);
  const rt = createRuntime(resolved, handleDeliveries);
  const lifecycle = consumerLifecycle(`createRabbitConsumer("${resolved.queue}")`, {
    start: () => startConsuming(rt),
    stop: (settings) => stopConsuming(rt, settings),
    inbox: resolved.inbox,
  });
  return {
    start: () => lifecycle.start(),
    stop: (stopOptions) => lifecycle.stop(stopOptions),
    get running() {
      return lifecycle.running;
    },
    get connected() {
      return rt.current !== undefined && !rt.current.session.lost;
    },
    topology() {
      return {
        queue: resolved.queue,
        deadLetterExchange: resolved.topology.deadLetterExchange,
        deadLetterQueue: resolved.topology.deadLetterQueue,
        retryQueues: [...rt.declaredRetryQueues].sort(),
      };
    },
  };
}

async function startConsuming<R>(rt: ConsumerRuntime<R>): Promise<void> {
  const { logger, queue, prefetch, concurrency, mode, batchSize } = rt.options;
  await connectOnce(rt);
  logger.info('rabbitmq consumer started', {
    queue,
    prefetch,
    concurrency,
    mode,
    ...(mode === 'batch' ? { batchSize } : {}),
  });
  connectionEvent(rt, { type: 'connected', reconnect: false });
}

async function stopConsuming<R>(
  rt: ConsumerRuntime<R>,
  { drain, timeoutMs }: Required<ConsumerStopOptions>,
): Promise<void> {
  const { logger, queue } = rt.options;
  rt.stopping.abort();
  const live = rt.current;
  if (live?.consumerTag !== undefined && !live.session.lost) {
    await live.session
      .bounded('cancelling the consumer', live.session.channel.cancel(live.consumerTag))
      .catch(() => undefined);
  }
  // Return what has not started yet, so another consumer can take it now.
  releaseUnstarted(
    rt,
    rt.work.drop(() => true),
    new Error('the consumer stopped before the delivery was started'),
  );
  if (drain && !(await idleWithin(rt, timeoutMs))) {
    logger.warn('rabbitmq consumer stopped with handlers still running; returning them', {
      queue,
      running: rt.work.active,
    });
  }
  // What still runs goes back to the queue now; its handler's late answer is dropped, and
  // the inbox answers the redelivery as a duplicate if the handler committed.
  const stopped = new Error('the consumer stopped before the delivery was settled');
  for (const d of rt.inFlight) {
    if (!d.released && !d.live.session.lost) release(rt, d, d.messageId, { error: stopped });
  }
  // Handlers still running learn through `ctx.signal` that their delivery is gone.
  if (rt.inFlight.size > 0) live?.abort.abort(stopped);
  rt.current = undefined;
  if (live) await live.session.close();
  logger.info('rabbitmq consumer stopped', { queue });
}

/** Whether the work queue went idle within `timeoutMs`. */
function idleWithin<R>(rt: ConsumerRuntime<R>, timeoutMs: number): Promise<boolean> {
  return finishesWithin(rt.work.idle(), timeoutMs);
}
