import { sleep, type Decision } from '@justonce/core/transport';
import { isCircuitOpenError } from '@justonce/core/retry';
import { report, type ConsumerRuntime, type QueueSetup } from '../runtime';
import type { HeldMessage } from './held-message';

/**
 * The store (or a dependency the inbox's `classify` calls infrastructure) is down while
 * `batch` is held: reports them `held` and waits the decision's backoff with the messages
 * kept in flight by the heartbeat, so SQS neither delivers them again nor raises their
 * receive count (which the inbox counts as attempts: a long outage would dead-letter good
 * messages). Resolves whether to try them again: not without a heartbeat (they would expire
 * meanwhile), not once the consumer stops or a delivery went stale. @internal
 */
export async function holdThrough<R>(
  rt: ConsumerRuntime<R>,
  setup: QueueSetup,
  batch: readonly HeldMessage[],
  decision: Extract<Decision<R>, { kind: 'hold' }>,
): Promise<boolean> {
  const gone = () => !rt.live || batch.some((h) => h.controller.signal.aborted);
  if (setup.heartbeat === undefined || gone()) return false;
  const open = isCircuitOpenError(decision.error);
  // The intake is paused for the breaker: give them back, visible when the probe may go.
  if (open && rt.intakePausedUntil !== undefined) return false;
  // An open breaker is warned once per open by the resilience layer, not as a store outage.
  if (!open)
    rt.storeOutage.failed(
      'sqs consumer: the store is unavailable; holding messages in flight and retrying them with backoff',
      decision.error,
      { sqsMessageIds: batch.map((h) => h.message.MessageId) },
    );
  const { error, delayMs } = decision;
  for (const h of batch) report(rt, h, { action: 'held', error, delayMs });
  const stale = batch[0]?.controller.signal;
  const wake = stale ? AbortSignal.any([rt.receiveAbort.signal, stale]) : rt.receiveAbort.signal;
  await sleep(delayMs, wake);
  return !gone();
}
