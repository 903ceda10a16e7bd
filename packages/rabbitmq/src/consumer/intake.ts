import { errorMessage, type Intake } from '@justonce/core/transport';
import type { ConsumerRuntime } from './runtime';
import { consume } from './session';

/**
 * The consumer's intake for the `resilience` option: while the breaker is open the broker
 * consumer is cancelled (`basic.cancel`), so the queue keeps its messages ready and shows no
 * consumer; when the probe may go through it consumes again. Deliveries already taken stay
 * on the hold path (unacknowledged, uncharged). A broker fault is logged and left to the
 * reconnect, which consumes (or not) as the intake stands then. @internal
 */
export function rabbitIntake<R>(rt: ConsumerRuntime<R>): Intake {
  const { logger, queue } = rt.options;
  const turn = (step: () => Promise<void>): void => {
    rt.intakeTurn = rt.intakeTurn.then(step).catch((error: unknown) => {
      logger.warn('rabbitmq consumer could not change its intake; the reconnect settles it', {
        queue,
        error: errorMessage(error),
      });
    });
  };
  return {
    pause() {
      if (rt.intakePaused) return;
      rt.intakePaused = true;
      turn(async () => {
        const live = rt.current;
        const tag = live?.consumerTag;
        if (live === undefined || tag === undefined || live.session.lost) return;
        live.consumerTag = undefined;
        await live.session.bounded('cancelling the consumer', live.session.channel.cancel(tag));
      });
    },
    resume() {
      if (!rt.intakePaused) return;
      rt.intakePaused = false;
      turn(async () => {
        const live = rt.current;
        if (rt.intakePaused || rt.stopping.signal.aborted) return;
        if (live === undefined || live.consumerTag !== undefined || live.session.lost) return;
        await consume(rt, live);
      });
    },
  };
}
