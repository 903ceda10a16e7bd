import type { JustonceError } from '@justonce/core';
import type { OutgoingMessage, PublishResult } from '@justonce/core/transport';
import { SqsInvalidMessageError } from '../errors/invalid-message-error';
import { SqsPublishError } from '../errors/publish-error';
import { SqsQueueError } from '../errors/queue-error';
import { SqsStateError } from '../errors/state-error';
import { Permits } from '../client/limiter';
import { isFifoQueue, isQueueName, isQueueUrl } from '../client/queue-names';
import { errorName, isSqsOutage } from '../client/request-errors';
import { prepareEntry } from './entry';
import type { PreparedEntry } from './prepared-entry';
import { planBatches, type PlannedBatch } from './plan';
import { queueUrlOf } from './queue-url';
import type { Failure, PublisherRuntime } from './runtime';
import { OUTAGE_WARNING, sendBatch } from './send-batch';

/** A message of the call, with its place in it. */
interface Indexed {
  readonly message: OutgoingMessage;
  readonly index: number;
}

/** One `publish` call: its messages and the results found so far, by index. */
interface Call {
  readonly messages: readonly OutgoingMessage[];
  readonly results: Array<PublishResult | undefined>;
}

function fail(call: Call, index: number, messageId: string, failure: Failure): void {
  call.results[index] = { messageId, ok: false, ...failure };
}

function invalid(call: Call, index: number, error: JustonceError): void {
  fail(call, index, call.messages[index]?.messageId ?? '', { error, retriable: error.retriable });
}

/**
 * The call's messages by destination, input order kept within each; a destination that is
 * neither a queue URL nor a queue name fails its messages.
 */
function byDestination(call: Call): Map<string, Indexed[]> {
  const groups = new Map<string, Indexed[]>();
  call.messages.forEach((message, index) => {
    const { destination } = message;
    // A call's messages mostly share a few destinations: each is checked once.
    const list = groups.get(destination);
    if (list) {
      list.push({ message, index });
      return;
    }
    if (
      typeof destination !== 'string' ||
      (!isQueueUrl(destination) && !isQueueName(destination))
    ) {
      invalid(
        call,
        index,
        new SqsInvalidMessageError(
          `destination "${String(destination)}" is neither an SQS queue URL nor a queue name`,
          { messageId: message.messageId, destination },
        ),
      );
      return;
    }
    groups.set(destination, [{ message, index }]);
  });
  return groups;
}

/** Set by the first failure that ends the call: nothing more of it is sent. */
type Halt = { halted?: unknown };

/**
 * The batches of one destination: its queue URL found, its messages prepared (a message
 * that cannot be sent fails here) and planned into requests. A failed lookup fails them all;
 * one that failed as an outage also halts the call, as a timed-out send does.
 */
async function planDestination(
  rt: PublisherRuntime,
  call: Call,
  destination: string,
  list: readonly Indexed[],
  halt: Halt,
): Promise<PlannedBatch[]> {
  let queueUrl: string;
  try {
    queueUrl = await queueUrlOf(rt, destination);
  } catch (error) {
    // A lookup that timed out, or found no queue (yet), is not the events' fault.
    const isOutage = isSqsOutage(error);
    if (isOutage) {
      // SQS does not answer: requests to the other destinations would only wait as long.
      halt.halted ??= error;
      rt.outage.failed(OUTAGE_WARNING, error, { destination });
    }
    for (const { message, index } of list) {
      fail(call, index, message.messageId, {
        error: new SqsQueueError(
          `queue "${destination}" not found (${errorName(error)})`,
          { destination },
          error,
        ),
        retriable: true,
        outage: isOutage,
      });
    }
    return [];
  }
  const { settings } = rt;
  const entrySettings = { ...settings, fifo: isFifoQueue(queueUrl) };
  const entries: PreparedEntry[] = [];
  for (const { message, index } of list) {
    const prepared = prepareEntry(message, index, entrySettings);
    if ('entry' in prepared) entries.push(prepared);
    else invalid(call, index, prepared);
  }
  return planBatches(queueUrl, entries, settings.maxMessageBytes, settings.concurrency);
}

/**
 * Sends the planned batches, at most `concurrency` requests at once, each after the batches
 * it must follow (per-key order). Keys (per queue) with a failed message hold their later
 * messages back.
 */
async function sendAll(
  rt: PublisherRuntime,
  call: Call,
  batches: readonly PlannedBatch[],
  halt: Halt,
): Promise<void> {
  const failedKeys = new Set<string>();
  const keyOf = (queueUrl: string, p: PreparedEntry) =>
    p.message.key === null ? undefined : `${queueUrl}\u0000${p.message.key}`;
  /** Fails `p` when an earlier message of its key failed; says whether it did. */
  const heldBack = (queueUrl: string, p: PreparedEntry): boolean => {
    const key = keyOf(queueUrl, p);
    if (key === undefined || !failedKeys.has(key)) return false;
    fail(call, p.index, p.message.messageId, {
      error: new SqsPublishError(
        `held back: an earlier message of key ${String(p.message.key)} failed`,
        { messageId: p.message.messageId, destination: p.message.destination },
        { retriable: true },
      ),
      retriable: true,
    });
    return true;
  };
  const permits = new Permits(rt.settings.concurrency);
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
        rt,
        batch.queueUrl,
        sendable,
        halt,
        (p, failure) => {
          const key = keyOf(batch.queueUrl, p);
          if (key !== undefined) failedKeys.add(key);
          fail(call, p.index, p.message.messageId, failure);
        },
        (p) => {
          call.results[p.index] = { messageId: p.message.messageId, ok: true };
        },
      );
    } finally {
      permits.give(1);
    }
  };
  for (const batch of batches) running.set(batch, run(batch));
  await Promise.all(running.values());
}

/** The publisher's `publish`: one result per message, in input order. @internal */
export async function publish(
  rt: PublisherRuntime,
  messages: readonly OutgoingMessage[],
): Promise<PublishResult[]> {
  if (rt.closed) throw new SqsStateError('publish was called after close');
  const call: Call = { messages, results: new Array<PublishResult | undefined>(messages.length) };
  const halt: Halt = {};
  const planned = await Promise.all(
    [...byDestination(call)].map(([destination, list]) =>
      planDestination(rt, call, destination, list, halt),
    ),
  );
  await sendAll(rt, call, planned.flat(), halt);
  return call.results.map((result, index) => {
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
}
