import { isJustonceError } from '@justonce/core';
import {
  messageHeaders,
  type OutgoingMessage,
  type PublishResult,
  errorMessage,
} from '@justonce/core/transport';
import type { Options } from 'amqplib';
import { PARTITION_KEY_HEADER } from '../consumer/envelope';
import { PublishRejectedError, RabbitConnectionError } from '../errors';
import {
  checkExchanges,
  ensureConnected,
  type Connected,
  type PublisherRuntime,
} from './connection';
import { parseDestination, type AmqpTarget } from './destination';

/**
 * Publishes one batch: reads the destinations, connects, checks the exchanges, sends every
 * message on the confirm channel and resolves with one result per message, in order, once
 * each is confirmed or known to have failed. Never throws for a message's failure. @internal
 */
export async function publishBatch(
  rt: PublisherRuntime,
  messages: readonly OutgoingMessage[],
): Promise<PublishResult[]> {
  const results: Array<PublishResult | undefined> = new Array(messages.length);
  const targets = parseTargets(messages, results);
  if (rt.closing) {
    return finish(messages, results, new RabbitConnectionError('the publisher is closed'));
  }
  let connected: Connected;
  try {
    connected = await ensureConnected(rt);
  } catch (error) {
    return finish(messages, results, error);
  }
  const missing = await checkExchanges(rt, connected, targets);
  await sendAll(rt, connected, { messages, targets, missing, results });
  return finish(messages, results, new RabbitConnectionError('not published'));
}

/** Each message's target; a destination that cannot be read fails its message here. */
function parseTargets(
  messages: readonly OutgoingMessage[],
  results: Array<PublishResult | undefined>,
): Array<AmqpTarget | undefined> {
  // A batch mostly goes to one or a few destinations: each is read once.
  const parsed = new Map<string, AmqpTarget | Error>();
  return messages.map((message, i) => {
    let target = parsed.get(message.destination);
    if (target === undefined) {
      try {
        target = parseDestination(message.destination);
      } catch (error) {
        target = error instanceof Error ? error : new Error(String(error));
      }
      parsed.set(message.destination, target);
    }
    if (target instanceof Error) {
      results[i] = failure(message, target);
      return undefined;
    }
    return target;
  });
}

/** Sends the batch in order and waits for every confirm; fills `batch.results`. */
async function sendAll(
  rt: PublisherRuntime,
  connected: Connected,
  batch: {
    readonly messages: readonly OutgoingMessage[];
    readonly targets: ReadonlyArray<AmqpTarget | undefined>;
    readonly missing: ReadonlyMap<string, Error>;
    readonly results: Array<PublishResult | undefined>;
  },
): Promise<void> {
  const { messages, targets, missing, results } = batch;
  // Confirms are counted rather than awaited one promise each: a batch is hundreds of
  // messages, and this loop is the publisher's share of the relay's CPU.
  let outstanding = 0;
  let allConfirmed: (() => void) | undefined;
  const confirmed = (i: number, message: OutgoingMessage) => (error: Error | undefined) => {
    results[i] = error ? failure(message, error) : { messageId: message.messageId, ok: true };
    outstanding -= 1;
    if (outstanding === 0) allConfirmed?.();
  };
  const timestamp = Math.floor(Date.now() / 1000);
  const heldKeys = new Set<string>();
  let unsettledBytes = 0;
  for (let i = 0; i < messages.length; i++) {
    const message = messages[i]!;
    const target = targets[i];
    if (heldKeys.size > 0 && message.key !== null && heldKeys.has(message.key)) {
      results[i] ??= failure(
        message,
        new PublishRejectedError('held back behind an earlier message of the same key', {
          details: { key: message.key },
        }),
      );
      continue;
    }
    const missingExchange = target ? missing.get(target.exchange) : undefined;
    if (!target || missingExchange) {
      if (missingExchange) results[i] = failure(message, missingExchange);
      if (message.key !== null) heldKeys.add(message.key);
      continue;
    }
    // amqplib buffers what the socket cannot take yet. A batch is bounded, so most of it may
    // wait in that buffer (as a raw publisher's would); past BUFFER_BYTES written since the
    // buffer last drained, the call waits for it, so large payloads cannot pile up.
    if (connected.publisher.mustWait && unsettledBytes > BUFFER_BYTES) {
      try {
        await connected.publisher.writable();
        unsettledBytes = 0;
      } catch (error) {
        results[i] = failure(message, error);
        continue;
      }
    }
    unsettledBytes += message.payload.byteLength;
    outstanding += 1;
    connected.publisher.send(
      target.exchange,
      target.routingKey,
      toBuffer(message.payload),
      properties(message, timestamp, rt.options.persistent),
      confirmed(i, message),
    );
  }
  if (outstanding > 0) {
    await new Promise<void>((resolve) => {
      allConfirmed = resolve;
    });
  }
}

/** Payload bytes one `publish` call may leave in amqplib's write buffer before it waits. */
const BUFFER_BYTES = 4 * 1024 * 1024;

/** A message's AMQP properties, built without intermediate objects (one per message). */
function properties(
  message: OutgoingMessage,
  timestamp: number,
  persistent: boolean,
): Options.Publish {
  const headers = messageHeaders(message);
  if (message.key !== null) headers[PARTITION_KEY_HEADER] = message.key;
  const publish: Options.Publish = {
    messageId: message.messageId,
    headers,
    timestamp,
    persistent,
  };
  const correlationId = message.headers['correlation-id'];
  if (correlationId) publish.correlationId = correlationId;
  const contentType = message.headers['content-type'];
  if (contentType) publish.contentType = contentType;
  return publish;
}

function toBuffer(payload: Uint8Array): Buffer {
  return Buffer.isBuffer(payload)
    ? payload
    : Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength);
}

function failure(message: OutgoingMessage, error: unknown): PublishResult {
  const err =
    error instanceof Error
      ? error
      : new RabbitConnectionError(`publish failed: ${errorMessage(error)}`, { cause: error });
  return {
    messageId: message.messageId,
    ok: false,
    error: err,
    retriable: isJustonceError(err) ? err.retriable : true,
    // A lost connection or channel is the broker's outage, not the message's.
    outage: !isJustonceError(err) || err instanceof RabbitConnectionError,
  };
}

function finish(
  messages: readonly OutgoingMessage[],
  results: Array<PublishResult | undefined>,
  fallback: unknown,
): PublishResult[] {
  return messages.map((message, i) => results[i] ?? failure(message, fallback));
}
