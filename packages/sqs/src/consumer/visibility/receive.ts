import { sleep } from '@justonce/core/transport';
import { ReceiveMessageCommand, type Message } from '@aws-sdk/client-sqs';
import { fullJitterBackoff } from '@justonce/core/retry';
import { errorName } from '../../client/request-errors';
import { timeLimited } from '../../client/time-limits';
import { handleBatch, handleOne } from '../handle';
import { groupOf } from '../fifo/groups';
import { intakeOpen } from '../intake';
import type { HeldMessage } from './held-message';
import type { ConsumerRuntime, QueueSetup } from '../runtime';

/** Backoff between failed receives: capped low, so polling resumes soon after a heal. */
const RECEIVE_BACKOFF = { baseMs: 200, capMs: 5_000 } as const;

/** One long poll for up to `count` messages. */
function receive<R>(
  rt: ConsumerRuntime<R>,
  setup: QueueSetup,
  count: number,
): Promise<{ Messages?: Message[] }> {
  const { queueUrl, waitTimeSeconds } = rt.options;
  const open = { until: Date.now() + waitTimeSeconds * 1000 };
  rt.openPolls.add(open);
  const answered = () => {
    // An aborted poll is still open on SQS's side: it stays until its wait is over.
    if (!rt.receiveAbort.signal.aborted) rt.openPolls.delete(open);
  };
  return timeLimited(
    'ReceiveMessage',
    rt.receiveLimitMs,
    (signal) =>
      rt.client.send(
        new ReceiveMessageCommand({
          QueueUrl: queueUrl,
          MaxNumberOfMessages: count,
          WaitTimeSeconds: waitTimeSeconds,
          VisibilityTimeout: setup.visibilityTimeoutSeconds,
          MessageAttributeNames: ['All'],
          MessageSystemAttributeNames: ['ApproximateReceiveCount', 'MessageGroupId'],
        }),
        { abortSignal: signal },
      ),
    rt.receiveAbort.signal,
  ).finally(answered);
}

/**
 * One poller: receives while the consumer is live and a whole receive batch fits the
 * permits, and hands what it receives to {@link dispatch}. A failed receive (a timeout, a
 * lost connection, the queue gone) is logged once per outage and retried with backoff.
 * @internal
 */
export async function poll<R>(rt: ConsumerRuntime<R>, setup: QueueSetup): Promise<void> {
  let failures = 0;
  while (rt.live) {
    // The breaker is open: no ReceiveMessage until its probe may go through.
    await intakeOpen(rt);
    if (!rt.live) break;
    const n = await rt.permits.take(rt.receiveBatch, rt.prefetch);
    if (n === 0) break;
    if (!rt.live) {
      rt.permits.give(n);
      break;
    }
    if (rt.intakePausedUntil !== undefined) {
      // The breaker opened while this poller waited for room.
      rt.permits.give(n);
      continue;
    }
    let messages: Message[];
    try {
      messages = (await receive(rt, setup, n)).Messages ?? [];
      failures = 0;
      rt.receiveOutage.recovered('sqs consumer: ReceiveMessage answers again; receiving resumed');
    } catch (error) {
      rt.permits.give(n);
      if (!rt.live) break;
      failures += 1;
      rt.instruments.receiveFailed();
      rt.receiveOutage.failed(
        'sqs consumer: ReceiveMessage failed; polling again with backoff until SQS answers',
        error,
      );
      await sleep(fullJitterBackoff(failures, RECEIVE_BACKOFF), rt.receiveAbort.signal);
      continue;
    }
    rt.permits.give(n - messages.length);
    rt.instruments.received(messages.length);
    dispatch(rt, setup, messages);
  }
}

/**
 * Takes `message` into the consumer's hands: numbered, held, watched by the heartbeat.
 * A message without a receipt handle (SQS never sends one) cannot be settled: skipped.
 */
function admit<R>(
  rt: ConsumerRuntime<R>,
  setup: QueueSetup,
  message: Message,
  controller: AbortController,
): HeldMessage | undefined {
  if (!message.ReceiptHandle) {
    rt.permits.give(1);
    return undefined;
  }
  const h: HeldMessage = {
    seq: ++rt.seq,
    message,
    receiptHandle: message.ReceiptHandle,
    controller,
  };
  rt.held.set(h.seq, h);
  setup.heartbeat?.watch(h);
  return h;
}

/** Tracks the settling of `batch`: a draining stop waits for it; its permits come back after. */
function track<R>(
  rt: ConsumerRuntime<R>,
  setup: QueueSetup,
  batch: readonly HeldMessage[],
  task: Promise<unknown>,
): void {
  const tracked: Promise<void> = task
    .then(() => undefined)
    .catch((error: unknown) => {
      rt.options.logger.error('sqs consumer: settling messages failed', {
        queueUrl: rt.options.queueUrl,
        sqsMessageIds: batch.map((h) => h.message.MessageId),
        error: errorName(error),
      });
    })
    .finally(() => {
      for (const h of batch) {
        setup.heartbeat?.unwatch(h);
        rt.held.delete(h.seq);
      }
      rt.tasks.delete(tracked);
      rt.permits.give(batch.length);
    });
  rt.tasks.add(tracked);
}

/**
 * Starts the handling of received messages: in batch mode the receive batch as one unit; in
 * message mode each message, a FIFO group's in order through its lane. @internal
 */
export function dispatch<R>(
  rt: ConsumerRuntime<R>,
  setup: QueueSetup,
  messages: readonly Message[],
): void {
  if (rt.options.mode === 'batch') {
    // One signal for the batch: its messages are handled together, so one going stale
    // aborts them all (and no listener per message is needed to pass that on).
    const controller = new AbortController();
    const batch = messages
      .map((m) => admit(rt, setup, m, controller))
      .filter((h) => h !== undefined);
    if (batch.length > 0) track(rt, setup, batch, handleBatch(rt, setup, batch, controller.signal));
    return;
  }
  const batch = messages
    .map((m) => admit(rt, setup, m, new AbortController()))
    .filter((h) => h !== undefined);
  for (const h of batch) {
    const task = setup.info.fifo
      ? setup.lanes.enqueue(groupOf(h), h.seq, (behind) => handleOne(rt, setup, h, behind))
      : handleOne(rt, setup, h, false);
    track(rt, setup, [h], task);
  }
}
