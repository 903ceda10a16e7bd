import { type ConsumerStopOptions, driveIntake, finishesWithin } from '@justonce/core/transport';
import { rabbitIntake } from './intake';
import { connectionEvent, type ConsumerRuntime, type Live } from './runtime';
import { connectOnce } from './session';
import { release, releaseUnstarted } from './settle';

/**
 * The `start` hook: connects, declares the topology and starts consuming; rejects when the
 * first connection or the topology fails. @internal
 */
export async function startConsuming<R>(rt: ConsumerRuntime<R>): Promise<void> {
  const { logger, queue, prefetch, concurrency, mode, batchSize, inbox } = rt.options;
  await connectOnce(rt);
  rt.undrive = driveIntake(inbox, { logger, intake: rabbitIntake(rt) });
  logger.info('rabbitmq consumer started', {
    queue,
    prefetch,
    concurrency,
    mode,
    ...(mode === 'batch' ? { batchSize } : {}),
  });
  connectionEvent(rt, { type: 'connected', reconnect: false });
}

/**
 * The `stop` hook: cancels the consumer, releases what has not started, waits for the
 * running handlers (with `drain`), gives back what still runs and closes the connection.
 * @internal
 */
export async function stopConsuming<R>(
  rt: ConsumerRuntime<R>,
  { drain, timeoutMs }: Required<ConsumerStopOptions>,
): Promise<void> {
  const { logger, queue } = rt.options;
  rt.stopping.abort();
  rt.undrive();
  const live = rt.current;
  // Cancelled before anything is nacked, or the broker would hand it straight back.
  await cancelConsumer(live);
  // A consume the breaker's resume began before the stop: cancelled too once it answered.
  await rt.intakeTurn;
  await cancelConsumer(live);
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

/** Cancels `live`'s broker consumer, if it has one; a failure is left to the close. */
async function cancelConsumer(live: Live | undefined): Promise<void> {
  const tag = live?.consumerTag;
  if (live === undefined || tag === undefined || live.session.lost) return;
  live.consumerTag = undefined;
  await live.session
    .bounded('cancelling the consumer', live.session.channel.cancel(tag))
    .catch(() => undefined);
}

/** Whether the work queue went idle within `timeoutMs`. */
function idleWithin<R>(rt: ConsumerRuntime<R>, timeoutMs: number): Promise<boolean> {
  return finishesWithin(rt.work.idle(), timeoutMs);
}
