import { fullJitterBackoff } from '@justonce/core/retry';
import { openSession, type AmqpSession } from '../client/connection';
import { ConfirmedPublisher } from '../client/confirmed-publisher';
import { PublishRejectedError, RabbitConnectionError } from '../errors';
import type { OutageLog } from '../outage/outage-log';
import type { AmqpTarget } from './destination';
import type { ResolvedPublisherOptions } from './options';

/** One open connection and confirm channel, with the exchanges known to exist. @internal */
export interface Connected {
  readonly session: AmqpSession;
  readonly publisher: ConfirmedPublisher;
  /** Exchange name → when its existence was last confirmed. */
  readonly verified: Map<string, number>;
}

/** What a publisher holds, passed to the functions of its sibling files. @internal */
export interface PublisherRuntime {
  readonly options: ResolvedPublisherOptions;
  readonly outage: OutageLog;
  current: Connected | undefined;
  opening: Promise<Connected> | undefined;
  closing: Promise<void> | undefined;
  /** Failed connection attempts in a row, and when the next one is due. */
  failedAttempts: number;
  nextAttemptAt: number;
}

async function open(rt: PublisherRuntime): Promise<Connected> {
  let session: AmqpSession;
  try {
    session = await openSession(rt.options.connection);
  } catch (error) {
    rt.failedAttempts += 1;
    rt.nextAttemptAt = Date.now() + fullJitterBackoff(rt.failedAttempts, rt.options.reconnect);
    rt.outage.begin(error instanceof Error ? error : new Error(String(error)));
    throw error;
  }
  rt.outage.end({ attempts: rt.failedAttempts + 1 });
  rt.failedAttempts = 0;
  const connected: Connected = {
    session,
    publisher: new ConfirmedPublisher(session, rt.options.confirmTimeoutMs),
    verified: new Map(),
  };
  void session.whenLost.then((error) => {
    if (rt.current === connected) rt.current = undefined;
    if (!rt.closing) rt.outage.begin(error);
    // The channel may be gone while the connection lives on: close both.
    void session.close();
  });
  return connected;
}

/**
 * The open connection, or a new one; fails at once as an outage while the next attempt is
 * not due yet, instead of waiting for another connect timeout. @internal
 */
export async function ensureConnected(rt: PublisherRuntime): Promise<Connected> {
  if (rt.current && !rt.current.session.lost) return rt.current;
  const waitMs = rt.nextAttemptAt - Date.now();
  if (!rt.opening && waitMs > 0) {
    throw new RabbitConnectionError(
      `RabbitMQ is unreachable; the next connection attempt is in ${waitMs} ms`,
    );
  }
  rt.opening ??= open(rt).finally(() => {
    rt.opening = undefined;
  });
  const connected = await rt.opening;
  if (rt.closing) {
    await connected.session.close();
    throw new RabbitConnectionError('the publisher is closed');
  }
  rt.current = connected;
  return connected;
}

/**
 * The exchanges among `targets` that do not exist (or could not be checked), each with the
 * error its messages fail with. An exchange found within `exchangeCheckTtlMs` is trusted.
 * @internal
 */
export async function checkExchanges(
  rt: PublisherRuntime,
  connected: Connected,
  targets: ReadonlyArray<AmqpTarget | undefined>,
): Promise<Map<string, Error>> {
  const missing = new Map<string, Error>();
  const now = Date.now();
  for (const target of targets) {
    if (!target || target.exchange === '' || missing.has(target.exchange)) continue;
    const checkedAt = connected.verified.get(target.exchange);
    if (checkedAt !== undefined && now - checkedAt < rt.options.exchangeCheckTtlMs) continue;
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

/** Closes the publisher once: waits for a connection being opened, then closes it. @internal */
export function closePublisher(rt: PublisherRuntime): Promise<void> {
  rt.closing ??= (async () => {
    const pendingOpen = rt.opening;
    if (pendingOpen)
      await pendingOpen.then(
        () => undefined,
        () => undefined,
      );
    const connected = rt.current;
    rt.current = undefined;
    if (connected) await connected.session.close();
  })();
  return rt.closing;
}
