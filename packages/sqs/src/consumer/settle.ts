import { asError } from '@justonce/core/transport';
import { ChangeMessageVisibilityCommand, type Message } from '@aws-sdk/client-sqs';
import type { InboxOutcome } from '@justonce/core';
import type { DeadLetterFacts, Decision } from '@justonce/core/transport';
import { fullJitterBackoff, isCircuitOpenError } from '@justonce/core/retry';
import { SqsDeadLetterError } from '../errors/dead-letter-error';
import { errorName } from '../client/request-errors';
import { timeLimited } from '../client/time-limits';
import { forwardToDeadLetterQueue } from './dead-letter';
import type { HeldMessage } from './visibility/held-message';
import {
  releaseDelayMs,
  report,
  toSeconds,
  type ConsumerRuntime,
  type QueueSetup,
} from './runtime';

function receiveCountOf(message: Message): number {
  const n = Number(message.Attributes?.ApproximateReceiveCount);
  return Number.isInteger(n) && n > 0 ? n : 1;
}

/**
 * Acts on the decision for `h` (an inbox outcome through core's `decide`, or a throw through
 * `decideOnThrow`); resolves whether the message was held back, which holds back the later
 * messages of its FIFO group. A `hold` reaches here only when it cannot be kept: the
 * consumer is stopping, has no heartbeat, or the delivery went stale. @internal
 */
export async function settle<R>(
  rt: ConsumerRuntime<R>,
  setup: QueueSetup,
  h: HeldMessage,
  decision: Decision<R>,
): Promise<boolean> {
  setup.heartbeat?.unwatch(h);
  // Taken over by a stop (released, or abandoned at its timeout): a visibility set now could
  // land after its release and hide it again, and a delete or report after the stop resolved
  // is the consumer acting once stopped. SQS delivers it again; the inbox answers what committed.
  if (rt.givenBack.has(h)) return true;
  switch (decision.kind) {
    case 'ack':
      acknowledge(rt, setup, h, decision.outcome);
      return false;
    case 'redeliver': {
      const error = await changeVisibility(rt, setup, h, toSeconds(decision.delayMs));
      const { outcome, delayMs } = decision;
      const failure = outcome.status === 'failed' ? outcome.error : undefined;
      report(rt, h, { action: 'redelivered', outcome, delayMs, error: error ?? failure });
      return true;
    }
    case 'dead-letter':
      return deadLetter(rt, setup, h, decision);
    case 'release':
      rt.options.logger.error('sqs consumer: the inbox threw; the message comes back later', {
        queueUrl: rt.options.queueUrl,
        sqsMessageId: h.message.MessageId,
        error: errorName(decision.error),
        message: decision.error.message,
      });
      return giveBack(rt, setup, h, decision.error, backoffMs(rt, h));
    case 'hold':
      return giveBack(rt, setup, h, decision.error, holdReleaseMs(rt, h, decision));
  }
}

/**
 * How long a held message given back stays hidden: once stopping, until the aborted polls
 * end; refused by an open breaker, until its probe (the decision's delay); else the backoff.
 */
function holdReleaseMs<R>(
  rt: ConsumerRuntime<R>,
  h: HeldMessage,
  decision: Extract<Decision<R>, { kind: 'hold' }>,
): number {
  if (!rt.live) return releaseDelayMs(rt);
  return isCircuitOpenError(decision.error) ? decision.delayMs : backoffMs(rt, h);
}

/** The consumer's own backoff for a message given back after a throw, by its receive count. */
function backoffMs<R>(rt: ConsumerRuntime<R>, h: HeldMessage): number {
  return toSeconds(fullJitterBackoff(receiveCountOf(h.message), rt.options.retry)) * 1000;
}

/**
 * Makes `h` visible again after `seconds`; the error when SQS refused. The heartbeat stops
 * extending `h` first, and an extension already on its way is waited for: landing after
 * this change it would undo it and hide the message (on a FIFO queue, its whole group) for
 * a visibility timeout. @internal
 */
export async function changeVisibility<R>(
  rt: ConsumerRuntime<R>,
  setup: QueueSetup,
  h: HeldMessage,
  seconds: number,
): Promise<Error | undefined> {
  setup.heartbeat?.unwatch(h);
  await setup.heartbeat?.settled(h);
  const { queueUrl } = rt.options;
  try {
    await timeLimited('ChangeMessageVisibility', rt.options.timeouts.requestMs, (signal) =>
      rt.client.send(
        new ChangeMessageVisibilityCommand({
          QueueUrl: queueUrl,
          ReceiptHandle: h.receiptHandle,
          VisibilityTimeout: seconds,
        }),
        { abortSignal: signal },
      ),
    );
    return undefined;
  } catch (error) {
    rt.options.logger.warn(
      'sqs consumer: ChangeMessageVisibility failed; the visibility timeout decides',
      { queueUrl, sqsMessageId: h.message.MessageId, error: errorName(error) },
    );
    return asError(error);
  }
}

/**
 * Gives `h` back to SQS unsettled, visible again after `delayMs` (rounded up to whole
 * seconds). Resolves `true`: the message was held back.
 */
async function giveBack<R>(
  rt: ConsumerRuntime<R>,
  setup: QueueSetup,
  h: HeldMessage,
  error: Error | undefined,
  delayMs: number,
): Promise<boolean> {
  const refused = await changeVisibility(rt, setup, h, toSeconds(delayMs));
  const cause = refused ?? error;
  report(rt, h, { action: 'released', delayMs, ...(cause ? { error: cause } : {}) });
  return true;
}

/**
 * Makes `h` visible again, unhandled: at once, or when stopping just after the long polls the
 * stop aborted (see {@link releaseDelayMs}). Nothing when a stop took `h` over already.
 * Resolves `true` (held back). @internal
 */
export function release<R>(
  rt: ConsumerRuntime<R>,
  setup: QueueSetup,
  h: HeldMessage,
): Promise<boolean> {
  if (rt.givenBack.has(h)) return Promise.resolve(true);
  return releaseAtStop(rt, setup, h);
}

/** {@link release} for the stop itself, of a message it took over. @internal */
export function releaseAtStop<R>(
  rt: ConsumerRuntime<R>,
  setup: QueueSetup,
  h: HeldMessage,
): Promise<boolean> {
  return giveBack(rt, setup, h, undefined, releaseDelayMs(rt));
}

/**
 * Deletes `h` (batched with others) and reports it `acked`, or `dead-lettered` with the
 * `facts` it was forwarded with; `abandoned` when SQS would not take the delete: the
 * message comes back and the inbox answers it as a duplicate. The delete is tracked, so a
 * draining stop waits for it.
 */
function acknowledge<R>(
  rt: ConsumerRuntime<R>,
  setup: QueueSetup,
  h: HeldMessage,
  outcome: InboxOutcome<R>,
  facts?: DeadLetterFacts,
): void {
  // Taken over by a stop while its dead letter was being forwarded: it is not deleted.
  if (rt.givenBack.has(h)) return;
  const deleting = setup.deleter.delete(h).then((deleted) => {
    const deadLetter = facts ? { deadLetter: facts } : {};
    if (deleted) {
      report(rt, h, { action: facts ? 'dead-lettered' : 'acked', outcome, ...deadLetter });
    } else {
      const error = new Error('the delete failed; SQS delivers the message again');
      report(rt, h, { action: 'abandoned', outcome, error, ...deadLetter });
    }
  });
  rt.tasks.add(deleting);
  void deleting.finally(() => rt.tasks.delete(deleting));
}

/**
 * Forwards `h` with the decision's facts to the dead-letter queue, when there is one, then
 * deletes it. When the forward fails the message is left in flight: SQS delivers it again
 * after its visibility timeout (the inbox answers it from the store's dead letter), so
 * nothing is lost. Resolves `false`: a dead letter does not hold its FIFO group back.
 */
async function deadLetter<R>(
  rt: ConsumerRuntime<R>,
  setup: QueueSetup,
  h: HeldMessage,
  decision: Extract<Decision<R>, { kind: 'dead-letter' }>,
): Promise<boolean> {
  const { outcome, facts } = decision;
  const { message } = h;
  const { logger, queueUrl } = rt.options;
  logger.warn('sqs consumer: message dead-lettered', {
    queueUrl,
    sqsMessageId: message.MessageId,
    messageId: facts.messageId,
    reason: facts.reason,
    deadLetterId: facts.deadLetterId,
    error: facts.error,
  });
  const dlq = setup.info.deadLetterQueueUrl;
  if (dlq !== undefined) {
    try {
      const { requestMs } = rt.options.timeouts;
      await forwardToDeadLetterQueue(rt.client, dlq, setup.info.fifo, message, facts, requestMs);
      rt.instruments.deadLetterForwarded();
    } catch (cause) {
      const error = new SqsDeadLetterError(
        { sqsMessageId: message.MessageId ?? '', deadLetterQueueUrl: dlq },
        cause,
      );
      logger.error(error.message, { ...error.details, error: errorName(cause) });
      report(rt, h, { action: 'released', outcome, error, deadLetter: facts });
      return false;
    }
  }
  acknowledge(rt, setup, h, outcome, facts);
  return false;
}
