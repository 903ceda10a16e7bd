import { asError, sleep } from '@justonce/core/transport';
import { fullJitterBackoff } from '@justonce/core/retry';
import type { ConsumeMessage } from 'amqplib';
import { openSession } from '../client/connection';
import { ConfirmedPublisher } from '../client/confirmed-publisher';
import { connectionEvent, type ConsumerRuntime, type Live } from './runtime';
import { releaseUnstarted } from './settle';
import { declareTopology } from './topology/declare';

/**
 * Opens a connection and a channel, declares the topology, sets the prefetch and starts
 * consuming. On a failure it closes what it opened and throws. @internal
 */
export async function connectOnce<R>(rt: ConsumerRuntime<R>): Promise<Live> {
  const { connection, topology, prefetch, confirmTimeoutMs } = rt.options;
  const session = await openSession(connection);
  const live: Live = {
    session,
    publisher: new ConfirmedPublisher(session, confirmTimeoutMs),
    retryQueues: new Map(),
    abort: new AbortController(),
  };
  try {
    await session.bounded('declaring the topology', declareTopology(session.channel, topology));
    await session.bounded('setting the prefetch', session.channel.prefetch(prefetch));
    rt.current = live;
    // While the breaker is open the intake stays cancelled; its resume consumes.
    if (!rt.intakePaused) await consume(rt, live);
  } catch (error) {
    if (rt.current === live) rt.current = undefined;
    await session.close();
    throw error;
  }
  void session.whenLost.then((error) => onLost(rt, live, error));
  return live;
}

/** Starts consuming the queue on `live`'s channel, noting the consumer tag. @internal */
export async function consume<R>(rt: ConsumerRuntime<R>, live: Live): Promise<void> {
  const { queue } = rt.options;
  const { consumerTag } = await live.session.bounded(
    `consuming queue "${queue}"`,
    live.session.channel.consume(queue, (message) => onMessage(rt, live, message), {
      noAck: false,
    }),
  );
  live.consumerTag = consumerTag;
}

function onMessage<R>(rt: ConsumerRuntime<R>, live: Live, message: ConsumeMessage | null): void {
  if (message === null) {
    // The broker cancelled the consumer (the queue was deleted): reconnect and redeclare.
    rt.options.logger.warn('rabbitmq consumer cancelled by the broker', {
      queue: rt.options.queue,
    });
    void live.session.close();
    return;
  }
  rt.work.push({ live, message, released: false });
}

function onLost<R>(rt: ConsumerRuntime<R>, live: Live, error: Error): void {
  live.abort.abort(error);
  if (rt.current === live) rt.current = undefined;
  void live.session.close();
  // Deliveries not started yet belong to the dead channel; the broker requeues them.
  releaseUnstarted(
    rt,
    rt.work.drop((d) => d.live === live),
    error,
  );
  if (rt.stopping.signal.aborted) return;
  rt.brokerOutage.begin(error);
  rt.reconnects.add(1, { queue: rt.options.queue });
  connectionEvent(rt, { type: 'disconnected', error });
  void reconnectLoop(rt);
}

/** Reopens the connection with full-jitter backoff until it is back or the consumer stops. */
async function reconnectLoop<R>(rt: ConsumerRuntime<R>): Promise<void> {
  const { reconnect, logger, queue } = rt.options;
  const stopped = rt.stopping.signal;
  for (let attempt = 1; !stopped.aborted; attempt++) {
    await sleep(fullJitterBackoff(attempt, reconnect), stopped);
    if (stopped.aborted) return;
    try {
      const live = await connectOnce(rt);
      if (stopped.aborted) {
        // The stop began while this connection opened and did not see it: close it here.
        if (rt.current === live) rt.current = undefined;
        await live.session.close();
        return;
      }
      rt.brokerOutage.end({ attempt });
      connectionEvent(rt, { type: 'connected', reconnect: true });
      return;
    } catch (error) {
      const err = asError(error);
      const nextDelayMs = fullJitterBackoff(attempt + 1, reconnect);
      // Warned once when the connection was lost; each failed attempt only at debug.
      logger.debug('rabbitmq consumer reconnection failed', {
        queue,
        attempt,
        error: err.message,
      });
      connectionEvent(rt, { type: 'reconnect-failed', error: err, attempt, nextDelayMs });
    }
  }
}
