import { sleep } from '@justonce/core/transport';
import {
  SendMessageBatchCommand,
  type BatchResultErrorEntry,
  type SendMessageBatchResultEntry,
} from '@aws-sdk/client-sqs';
import { fullJitterBackoff } from '@justonce/core/retry';
import { SqsPublishError } from '../errors/publish-error';
import { SqsTimeoutError } from '../errors/timeout-error';
import { isFifoQueue } from '../client/queue-names';
import {
  errorName,
  isQueueMissing,
  isRetriableRequestError,
  isSqsOutage,
} from '../client/request-errors';
import { timeLimited } from '../client/time-limits';
import { entryOf, requestEntry } from './entry';
import type { PreparedEntry } from './prepared-entry';
import type { Failure, PublisherRuntime } from './runtime';

/** Warned once per outage, for a send or a queue-name lookup SQS did not take. @internal */
export const OUTAGE_WARNING =
  'sqs publisher: SQS did not take a request; its events stay pending and the relay retries them';

/** Fails every entry of a request that failed as a whole. */
function failRequest(
  rt: PublisherRuntime,
  queueUrl: string,
  entries: readonly PreparedEntry[],
  error: unknown,
  fail: (entry: PreparedEntry, failure: Failure) => void,
): void {
  // The network or SQS itself (or the queue gone with a broker's data), not the message.
  const isOutage = isSqsOutage(error);
  if (isOutage) {
    rt.outage.failed(OUTAGE_WARNING, error, { queueUrl });
  }
  for (const p of entries) {
    fail(p, {
      error: new SqsPublishError(
        `SendMessageBatch to ${queueUrl} failed (${errorName(error)})`,
        { messageId: p.message.messageId, destination: p.message.destination },
        { retriable: true, cause: error },
      ),
      retriable: true,
      outage: isOutage,
    });
  }
}

/**
 * Sends one planned batch, again for entries and requests that may succeed on a retry.
 * A timeout or a missing queue ends the whole call (`call.halted`): sending more on a
 * connection that does not answer only multiplies the wait. @internal
 */
export async function sendBatch(
  rt: PublisherRuntime,
  queueUrl: string,
  entries: readonly PreparedEntry[],
  call: { halted?: unknown },
  fail: (entry: PreparedEntry, failure: Failure) => void,
  succeed: (entry: PreparedEntry) => void,
): Promise<void> {
  let pending = entries;
  for (let attempt = 1; pending.length > 0; attempt++) {
    if (call.halted !== undefined) return failRequest(rt, queueUrl, pending, call.halted, fail);
    const last = attempt >= rt.settings.maxAttempts;
    let successful: SendMessageBatchResultEntry[];
    let failed: BatchResultErrorEntry[];
    try {
      const { requestMs } = rt.settings.timeouts;
      const response = await timeLimited('SendMessageBatch', requestMs, (signal) =>
        rt.client.send(
          new SendMessageBatchCommand({ QueueUrl: queueUrl, Entries: pending.map(requestEntry) }),
          { abortSignal: signal },
        ),
      );
      successful = response.Successful ?? [];
      failed = response.Failed ?? [];
      rt.outage.recovered('sqs publisher: SQS takes requests again');
    } catch (error) {
      if (error instanceof SqsTimeoutError || isQueueMissing(error)) call.halted ??= error;
      if (call.halted !== undefined || !isRetriableRequestError(error) || last) {
        return failRequest(rt, queueUrl, pending, error, fail);
      }
      await sleep(fullJitterBackoff(attempt, rt.settings.backoff));
      continue;
    }
    for (const ok of successful) {
      const p = entryOf(pending, ok.Id);
      if (p) succeed(p);
    }
    const again: PreparedEntry[] = [];
    for (const bad of failed) {
      const p = entryOf(pending, bad.Id);
      if (!p) continue;
      if (!bad.SenderFault && !last) {
        again.push(p);
        continue;
      }
      fail(p, {
        error: new SqsPublishError(
          `SQS refused message ${p.message.messageId}: ${bad.Code ?? 'unknown'} ${bad.Message ?? ''}`.trim(),
          {
            messageId: p.message.messageId,
            destination: p.message.destination,
            sqsCode: bad.Code ?? 'unknown',
            senderFault: bad.SenderFault === true,
          },
          { retriable: !bad.SenderFault },
        ),
        retriable: !bad.SenderFault,
      });
    }
    warnIfReordered(rt, queueUrl, pending, failed, successful);
    pending = again.sort((a, b) => a.index - b.index);
    if (pending.length > 0) await sleep(fullJitterBackoff(attempt, rt.settings.backoff));
  }
}

/**
 * Warns when SQS failed an entry of a FIFO batch and accepted a later entry of the same
 * group in the same request: the group's order is broken downstream.
 */
function warnIfReordered(
  rt: PublisherRuntime,
  queueUrl: string,
  entries: readonly PreparedEntry[],
  failed: readonly BatchResultErrorEntry[],
  successful: readonly SendMessageBatchResultEntry[],
): void {
  if (failed.length === 0 || !isFifoQueue(queueUrl)) return;
  const ok = successful.map((s) => entryOf(entries, s.Id)).filter((p) => p !== undefined);
  for (const bad of failed) {
    const p = entryOf(entries, bad.Id);
    if (!p || p.message.key === null) continue;
    if (ok.some((o) => o.message.key === p.message.key && o.index > p.index)) {
      rt.logger.warn(
        'sqs publisher: a later message of the same group was accepted before a failed one',
        {
          queueUrl,
          key: p.message.key,
          messageId: p.message.messageId,
        },
      );
    }
  }
}
