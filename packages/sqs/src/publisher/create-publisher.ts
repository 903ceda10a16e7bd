import {
  GetQueueUrlCommand,
  SendMessageBatchCommand,
  type SendMessageBatchResultEntry,
  type BatchResultErrorEntry,
} from '@aws-sdk/client-sqs';
import {
  ConfigurationError,
  fullJitterBackoff,
  silentLogger,
  type JustonceError,
  type OutgoingMessage,
  type Publisher,
  type PublishResult,
} from '@justonce/core';
import { resolveClient } from '../client';
import { SqsInvalidMessageError } from '../errors/invalid-message-error';
import { SqsPublishError } from '../errors/publish-error';
import { SqsQueueError } from '../errors/queue-error';
import { SqsStateError } from '../errors/state-error';
import { Permits } from '../limiter';
import { isFifoQueue, isQueueName, isQueueUrl } from '../queue-names';
import { SqsTimeoutError } from '../errors/timeout-error';
import { OutageNotice } from '../outage-notice';
import { errorName, isQueueMissing, isRetriableRequestError, isSqsOutage } from '../request-errors';
import { sleep } from '../sleep';
import { timeLimited } from '../time-limits';
import { entryOf, prepareEntry, requestEntry, type PreparedEntry } from './entry';
import { resolvePublisherOptions } from './options';
import { planBatches, type PlannedBatch } from './plan';
import type { SqsPublisherOptions } from './types';

type Failure = { readonly error: Error; readonly retriable: boolean; readonly outage?: boolean };

/**
 * Creates the relay's SQS publisher: a core {@link Publisher} that sends with
 * `SendMessageBatch` in requests of up to ten messages.
 *
 * - `destination` is a queue URL (`https://sqs.<region>.amazonaws.com/<account>/<name>`,
 *   used as is) or a queue name (looked up once with `GetQueueUrl`, then cached). Anything
 *   else fails that message with {@link SqsInvalidMessageError}.
 * - Headers travel as String message attributes, `message-id` = the message id among them;
 *   more than SQS's 10 fails the message with {@link SqsTooManyAttributesError}.
 * - FIFO queues (name ending `.fifo`): `MessageGroupId` = partition key (the message id when
 *   there is none), `MessageDeduplicationId` = message id (either is replaced by its SHA-256
 *   when SQS would refuse it as is).
 * - A message over `maxMessageBytes` fails with {@link SqsMessageTooLargeError}.
 * - Entries SQS reports as failed are sent again (up to `maxAttempts`); a later message of
 *   the same key is held back behind a message of its key that failed.
 * - A request that fails for the network's or the service's sake (timed out after
 *   `timeouts.requestMs`, connection lost, throttled, server fault, the queue missing) is an
 *   outage: its messages are reported with `outage: true`, so the relay retries them and
 *   never charges them. After a timeout or a missing queue nothing more of the call is sent.
 *
 * `close` destroys the client only when the publisher created it from `clientConfig`.
 */
export function createSqsPublisher(options: SqsPublisherOptions): Publisher {
  if (typeof options !== 'object' || options === null) {
    throw new ConfigurationError('createSqsPublisher needs options');
  }
  const settings = resolvePublisherOptions(options);
  const { client, owned } = resolveClient(options, 'createSqsPublisher', settings.timeouts);
  const { requestMs } = settings.timeouts;
  const logger = options.logger ?? silentLogger;
  const outage = new OutageNotice(logger, { limitMs: requestMs });
  const urls = new Map<string, Promise<string>>();
  let closed = false;

  const queueUrlOf = (destination: string): Promise<string> => {
    if (isQueueUrl(destination)) return Promise.resolve(destination);
    const cached = urls.get(destination);
    if (cached) return cached;
    const lookup = timeLimited('GetQueueUrl', requestMs, (signal) =>
      client.send(new GetQueueUrlCommand({ QueueName: destination }), { abortSignal: signal }),
    ).then(({ QueueUrl }) => {
      if (!QueueUrl) throw new Error('GetQueueUrl returned no URL');
      return QueueUrl;
    });
    urls.set(destination, lookup);
    lookup.catch(() => urls.delete(destination));
    return lookup;
  };

  /** Fails every entry of a request that failed as a whole. */
  function failRequest(
    queueUrl: string,
    entries: readonly PreparedEntry[],
    error: unknown,
    fail: (entry: PreparedEntry, failure: Failure) => void,
  ): void {
    // The network or SQS itself (or the queue gone with a broker's data), not the message.
    const isOutage = isSqsOutage(error);
    if (isOutage) {
      outage.failed(
        'sqs publisher: SQS did not take a request; its events stay pending and the relay retries them',
        error,
        { queueUrl },
      );
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
   * connection that does not answer only multiplies the wait.
   */
  async function sendBatch(
    queueUrl: string,
    entries: readonly PreparedEntry[],
    call: { halted?: unknown },
    fail: (entry: PreparedEntry, failure: Failure) => void,
    succeed: (entry: PreparedEntry) => void,
  ): Promise<void> {
    let pending = entries;
    for (let attempt = 1; pending.length > 0; attempt++) {
      if (call.halted !== undefined) return failRequest(queueUrl, pending, call.halted, fail);
      const last = attempt >= settings.maxAttempts;
      let successful: SendMessageBatchResultEntry[];
      let failed: BatchResultErrorEntry[];
      try {
        const response = await timeLimited('SendMessageBatch', requestMs, (signal) =>
          client.send(
            new SendMessageBatchCommand({ QueueUrl: queueUrl, Entries: pending.map(requestEntry) }),
            { abortSignal: signal },
          ),
        );
        successful = response.Successful ?? [];
        failed = response.Failed ?? [];
        outage.recovered('sqs publisher: SQS takes requests again');
      } catch (error) {
        if (error instanceof SqsTimeoutError || isQueueMissing(error)) call.halted ??= error;
        if (call.halted !== undefined || !isRetriableRequestError(error) || last) {
          return failRequest(queueUrl, pending, error, fail);
        }
        await sleep(fullJitterBackoff(attempt, settings.backoff));
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
      warnIfReordered(queueUrl, pending, failed, successful);
      pending = again.sort((a, b) => a.index - b.index);
      if (pending.length > 0) await sleep(fullJitterBackoff(attempt, settings.backoff));
    }
  }

  function warnIfReordered(
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
        logger.warn(
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

  return {
    async publish(messages: readonly OutgoingMessage[]): Promise<PublishResult[]> {
      if (closed) throw new SqsStateError('publish was called after close');
      const results = new Array<PublishResult | undefined>(messages.length);
      const fail = (index: number, messageId: string, failure: Failure) => {
        results[index] = { messageId, ok: false, ...failure };
      };
      const invalid = (index: number, error: JustonceError) =>
        fail(index, messages[index]?.messageId ?? '', { error, retriable: error.retriable });

      // Group by destination, keeping input order within each.
      const byDestination = new Map<string, { message: OutgoingMessage; index: number }[]>();
      messages.forEach((message, index) => {
        const { destination } = message;
        // A call's messages mostly share a few destinations: each is checked once.
        const list = byDestination.get(destination);
        if (list) {
          list.push({ message, index });
          return;
        }
        if (
          typeof destination !== 'string' ||
          (!isQueueUrl(destination) && !isQueueName(destination))
        ) {
          invalid(
            index,
            new SqsInvalidMessageError(
              `destination "${String(destination)}" is neither an SQS queue URL nor a queue name`,
              { messageId: message.messageId, destination },
            ),
          );
          return;
        }
        byDestination.set(destination, [{ message, index }]);
      });

      const batches: PlannedBatch[] = [];
      await Promise.all(
        [...byDestination].map(async ([destination, list]) => {
          let queueUrl: string;
          try {
            queueUrl = await queueUrlOf(destination);
          } catch (error) {
            // A lookup that timed out, or found no queue (yet), is not the events' fault.
            const isOutage = isSqsOutage(error);
            if (isOutage) {
              outage.failed('sqs publisher: GetQueueUrl failed; the relay retries', error, {
                destination,
              });
            }
            for (const { message, index } of list) {
              fail(index, message.messageId, {
                error: new SqsQueueError(
                  `queue "${destination}" not found (${errorName(error)})`,
                  { destination },
                  error,
                ),
                retriable: true,
                outage: isOutage,
              });
            }
            return;
          }
          const entrySettings = { ...settings, fifo: isFifoQueue(queueUrl) };
          const entries: PreparedEntry[] = [];
          for (const { message, index } of list) {
            const prepared = prepareEntry(message, index, entrySettings);
            if ('entry' in prepared) entries.push(prepared);
            else invalid(index, prepared);
          }
          batches.push(
            ...planBatches(queueUrl, entries, settings.maxMessageBytes, settings.concurrency),
          );
        }),
      );

      // Keys (per queue) with a failed message: later messages of the key are held back.
      const failedKeys = new Set<string>();
      const keyOf = (queueUrl: string, p: PreparedEntry) =>
        p.message.key === null ? undefined : `${queueUrl}\u0000${p.message.key}`;
      /** Fails `p` when an earlier message of its key failed; says whether it did. */
      const heldBack = (queueUrl: string, p: PreparedEntry): boolean => {
        const key = keyOf(queueUrl, p);
        if (key === undefined || !failedKeys.has(key)) return false;
        fail(p.index, p.message.messageId, {
          error: new SqsPublishError(
            `held back: an earlier message of key ${String(p.message.key)} failed`,
            { messageId: p.message.messageId, destination: p.message.destination },
            { retriable: true },
          ),
          retriable: true,
        });
        return true;
      };
      const permits = new Permits(settings.concurrency);
      const call: { halted?: unknown } = {};
      const running = new Map<PlannedBatch, Promise<void>>();
      const run = async (batch: PlannedBatch): Promise<void> => {
        await Promise.all(batch.after.map((b) => running.get(b)));
        // Mostly no key has failed, and the batch goes out as planned.
        let sendable = batch.entries;
        if (failedKeys.size > 0) sendable = sendable.filter((p) => !heldBack(batch.queueUrl, p));
        if (sendable.length === 0) return;
        await permits.take(1);
        try {
          await sendBatch(
            batch.queueUrl,
            sendable,
            call,
            (p, failure) => {
              const key = keyOf(batch.queueUrl, p);
              if (key !== undefined) failedKeys.add(key);
              fail(p.index, p.message.messageId, failure);
            },
            (p) => {
              results[p.index] = { messageId: p.message.messageId, ok: true };
            },
          );
        } finally {
          permits.give(1);
        }
      };
      for (const batch of batches) running.set(batch, run(batch));
      await Promise.all(running.values());

      return results.map((result, index) => {
        if (result !== undefined) return result;
        const messageId = messages[index]?.messageId ?? '';
        return {
          messageId,
          ok: false,
          error: new SqsPublishError(
            'SQS answered without a result for this message',
            { messageId, destination: messages[index]?.destination ?? '' },
            { retriable: true },
          ),
          retriable: true,
        };
      });
    },
    async close(): Promise<void> {
      if (closed) return;
      closed = true;
      if (owned) client.destroy();
    },
  };
}
