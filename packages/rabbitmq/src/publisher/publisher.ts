import {
  ConfigurationError,
  fullJitterBackoff,
  isJustonceError,
  messageHeaders,
  optionKeys,
  rejectUnknownOptions,
  silentLogger,
  type Logger,
  type OutgoingMessage,
  type PublishResult,
  type Publisher,
} from '@justonce/core';
import type { Options } from 'amqplib';
import {
  CONNECTION_KEYS,
  describe,
  openSession,
  resolveConnection,
  type AmqpSession,
  type ConnectionOptions,
} from '../amqp/connection';
import { ConfirmedPublisher } from '../amqp/confirmed-publisher';
import { PARTITION_KEY_HEADER } from '../consumer/envelope';
import { PublishRejectedError, RabbitConnectionError } from '../errors';
import type { RabbitBackoffOptions } from '../consumer/options';
import { positiveInteger } from '../options';
import { OutageLog } from '../outage-log';
import { parseDestination, type AmqpTarget } from './destination';

/** Options of {@link createRabbitPublisher}: `url` or `connect`, plus the ones below. */
export interface RabbitPublisherOptions extends ConnectionOptions {
  /**
   * How long to wait for the broker's confirm of each message. Default 15 000 ms. When it
   * fires the connection is presumed dead (a half-open connection never confirms): it is
   * destroyed, every message still waiting fails as an outage (`RabbitConnectionError`,
   * `outage: true`, never charged to the message), and the next publish reconnects.
   */
  readonly confirmTimeoutMs?: number;
  /** Publish with delivery mode 2 (persistent). Default true. */
  readonly persistent?: boolean;
  /**
   * How long a checked exchange is trusted to exist before it is checked again, in ms.
   * Default 60 000. Publishing to a missing exchange would close the channel for every
   * message in flight, so each exchange is checked on a throwaway channel first.
   */
  readonly exchangeCheckTtlMs?: number;
  /**
   * Backoff between connection attempts once the connection is lost or cannot be opened
   * (defaults 100 / 5 000 ms): a `publish` before the next attempt is due fails at once as
   * an outage instead of waiting for another connect timeout.
   */
  readonly reconnect?: RabbitBackoffOptions;
  /** Where connection problems are logged. Default: silent. */
  readonly logger?: Logger;
}

const PUBLISHER_KEYS = optionKeys<RabbitPublisherOptions>()([
  ...CONNECTION_KEYS,
  'confirmTimeoutMs',
  'persistent',
  'exchangeCheckTtlMs',
  'reconnect',
  'logger',
]);
const BACKOFF_KEYS = optionKeys<RabbitBackoffOptions>()(['baseMs', 'capMs']);

interface Connected {
  readonly session: AmqpSession;
  readonly publisher: ConfirmedPublisher;
  /** Exchange name → when its existence was last confirmed. */
  readonly verified: Map<string, number>;
}

/**
 * A {@link Publisher} for the outbox relay that publishes to RabbitMQ on a confirm channel.
 *
 * - Each outbox `destination` is read by {@link parseDestination}: `queue` through the
 *   default exchange, or `exchange/routingKey`.
 * - Every message is published `mandatory`; a message the broker returns as unroutable is
 *   reported failed (retriable) so it stays in the outbox, never silently dropped.
 * - `publish` resolves when every message is confirmed or known to have failed; it never
 *   throws for a message's failure. Messages go out in the order given on one channel.
 *   A message that fails before it is sent (bad destination, missing exchange) holds back
 *   the later messages of its key in the same call.
 * - The message id travels as `properties.messageId` and the `message-id` header; the
 *   `correlation-id` header also as `properties.correlationId`, `content-type` as
 *   `properties.contentType`; the partition key as the `partition-key` header; every
 *   header as an AMQP header.
 * - The connection opens on the first publish and reopens on a later publish after a loss,
 *   attempts spaced by a capped jittered backoff. Every broker call has a time limit
 *   (connect, confirm, heartbeat, exchange check); a loss is logged once, and so is the
 *   recovery. `close` is idempotent.
 */
export function createRabbitPublisher(options: RabbitPublisherOptions): Publisher {
  rejectUnknownOptions(options, PUBLISHER_KEYS, 'createRabbitPublisher');
  rejectUnknownOptions(options.reconnect, BACKOFF_KEYS, 'createRabbitPublisher', 'reconnect');
  const connection = resolveConnection(options, 'createRabbitPublisher', 'justonce-publisher');
  const confirmTimeoutMs = positiveInteger(options.confirmTimeoutMs, 15_000, 'confirmTimeoutMs');
  const reconnect = {
    baseMs: positiveInteger(options.reconnect?.baseMs, 100, 'reconnect.baseMs'),
    capMs: positiveInteger(options.reconnect?.capMs, 5_000, 'reconnect.capMs'),
  };
  const exchangeCheckTtlMs = positiveInteger(
    options.exchangeCheckTtlMs,
    60_000,
    'exchangeCheckTtlMs',
  );
  const persistent = options.persistent ?? true;
  if (typeof persistent !== 'boolean') {
    throw new ConfigurationError('createRabbitPublisher: persistent must be a boolean');
  }
  const logger = options.logger ?? silentLogger;
  const outage = new OutageLog(
    logger,
    {
      down: 'rabbitmq publisher lost its channel; reconnecting',
      up: 'rabbitmq publisher reconnected',
    },
    {},
  );

  let current: Connected | undefined;
  let opening: Promise<Connected> | undefined;
  let closing: Promise<void> | undefined;
  /** Failed connection attempts in a row, and when the next one is due. */
  let failedAttempts = 0;
  let nextAttemptAt = 0;

  async function open(): Promise<Connected> {
    let session: AmqpSession;
    try {
      session = await openSession(connection);
    } catch (error) {
      failedAttempts += 1;
      nextAttemptAt = Date.now() + fullJitterBackoff(failedAttempts, reconnect);
      outage.begin(error instanceof Error ? error : new Error(String(error)));
      throw error;
    }
    outage.end({ attempts: failedAttempts + 1 });
    failedAttempts = 0;
    const connected: Connected = {
      session,
      publisher: new ConfirmedPublisher(session, confirmTimeoutMs),
      verified: new Map(),
    };
    void session.whenLost.then((error) => {
      if (current === connected) current = undefined;
      if (!closing) outage.begin(error);
      // The channel may be gone while the connection lives on: close both.
      void session.close();
    });
    return connected;
  }

  async function ensureConnected(): Promise<Connected> {
    if (current && !current.session.lost) return current;
    const waitMs = nextAttemptAt - Date.now();
    if (!opening && waitMs > 0) {
      throw new RabbitConnectionError(
        `RabbitMQ is unreachable; the next connection attempt is in ${waitMs} ms`,
      );
    }
    opening ??= open().finally(() => {
      opening = undefined;
    });
    const connected = await opening;
    if (closing) {
      await connected.session.close();
      throw new RabbitConnectionError('the publisher is closed');
    }
    current = connected;
    return connected;
  }

  async function checkExchanges(
    connected: Connected,
    targets: ReadonlyArray<AmqpTarget | undefined>,
  ): Promise<Map<string, Error>> {
    const missing = new Map<string, Error>();
    const now = Date.now();
    for (const target of targets) {
      if (!target || target.exchange === '' || missing.has(target.exchange)) continue;
      const checkedAt = connected.verified.get(target.exchange);
      if (checkedAt !== undefined && now - checkedAt < exchangeCheckTtlMs) continue;
      try {
        if (await connected.session.exchangeExists(target.exchange)) {
          connected.verified.set(target.exchange, now);
        } else {
          missing.set(
            target.exchange,
            new PublishRejectedError(`exchange "${target.exchange}" does not exist`, {
              details: { exchange: target.exchange },
            }),
          );
        }
      } catch (error) {
        missing.set(
          target.exchange,
          new RabbitConnectionError(`cannot check exchange "${target.exchange}"`, {
            cause: error,
          }),
        );
      }
    }
    return missing;
  }

  async function publish(messages: readonly OutgoingMessage[]): Promise<PublishResult[]> {
    const results: Array<PublishResult | undefined> = new Array(messages.length);
    // A batch mostly goes to one or a few destinations: each is read once.
    const parsed = new Map<string, AmqpTarget | Error>();
    const targets: Array<AmqpTarget | undefined> = messages.map((message, i) => {
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
    if (closing) {
      return finish(messages, results, new RabbitConnectionError('the publisher is closed'));
    }
    let connected: Connected;
    try {
      connected = await ensureConnected();
    } catch (error) {
      return finish(messages, results, error);
    }
    const missing = await checkExchanges(connected, targets);

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
        properties(message, timestamp, persistent),
        confirmed(i, message),
      );
    }
    if (outstanding > 0) {
      await new Promise<void>((resolve) => {
        allConfirmed = resolve;
      });
    }
    return finish(messages, results, new RabbitConnectionError('not published'));
  }

  return {
    publish,
    close() {
      closing ??= (async () => {
        const pendingOpen = opening;
        if (pendingOpen)
          await pendingOpen.then(
            () => undefined,
            () => undefined,
          );
        const connected = current;
        current = undefined;
        if (connected) await connected.session.close();
      })();
      return closing;
    },
  };
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
      : new RabbitConnectionError(`publish failed: ${describe(error)}`, { cause: error });
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
