import {
  connect as amqpConnect,
  type ChannelModel,
  type ConfirmChannel,
  type Options,
} from 'amqplib';
import { ConfigurationError } from '@justonce/core';
import {
  positiveIntegerOption,
  asError,
  errorMessage,
  withTimeout,
} from '@justonce/core/transport';
import { RabbitConnectionError } from '../errors';

/**
 * Opens an amqplib connection. Give this instead of `url` to control TLS, credentials or
 * socket options yourself; the function is called again for every reconnection.
 */
export type AmqpConnect = () => Promise<ChannelModel>;

/** How a consumer or publisher reaches the broker: exactly one of `url` or `connect`. */
export interface ConnectionOptions {
  /** An `amqp://` or `amqps://` URL, or amqplib's connection object. */
  readonly url?: string | Options.Connect;
  /** Opens a connection; called again on every reconnection. */
  readonly connect?: AmqpConnect;
  /**
   * Name shown for the connection in the broker's management tools
   * (`rabbitmqctl list_connections client_properties`). Used only with `url`.
   */
  readonly connectionName?: string;
  /**
   * AMQP heartbeat in seconds, used only with `url` (a `heartbeat` in the URL or the connect
   * object wins); `0` turns heartbeats off. Default 10. A connection that receives nothing
   * (no frame, no heartbeat) for two to three heartbeats is taken for dead and reopened: with
   * the default, a broker behind a network partition is noticed within 30 s.
   */
  readonly heartbeatSeconds?: number;
  /**
   * Longest wait for a connection to open: TCP connect, TLS, AMQP handshake and the channel,
   * your `connect` function included. Default 10 000 ms.
   */
  readonly connectTimeoutMs?: number;
  /**
   * Longest wait for the broker's answer to a channel or queue operation (declaring the
   * topology, `basic.qos`, `basic.consume`, `basic.cancel`, checking an exchange, closing).
   * When it fires the connection is destroyed and reopened: a broker that does not answer a
   * declaration within it is not answering at all. Default 10 000 ms.
   */
  readonly operationTimeoutMs?: number;
}

/** The option names {@link ConnectionOptions} declares, for the unknown-key checks. @internal */
export const CONNECTION_KEYS = [
  'url',
  'connect',
  'connectionName',
  'heartbeatSeconds',
  'connectTimeoutMs',
  'operationTimeoutMs',
] as const;

/** Defaults of the time limits, in one place for the README. @internal */
export const CONNECTION_DEFAULTS = {
  heartbeatSeconds: 10,
  connectTimeoutMs: 10_000,
  operationTimeoutMs: 10_000,
} as const;

/** How to open a connection, and how long each step may take. @internal */
export interface ConnectionSettings {
  readonly connect: AmqpConnect;
  readonly connectTimeoutMs: number;
  readonly operationTimeoutMs: number;
}

/** Validates connection options and returns how to open a connection. @internal */
export function resolveConnection(
  options: ConnectionOptions,
  what: string,
  defaultName: string,
): ConnectionSettings {
  const connectTimeoutMs = positiveIntegerOption(
    options.connectTimeoutMs,
    'connectTimeoutMs',
    CONNECTION_DEFAULTS.connectTimeoutMs,
  );
  const operationTimeoutMs = positiveIntegerOption(
    options.operationTimeoutMs,
    'operationTimeoutMs',
    CONNECTION_DEFAULTS.operationTimeoutMs,
  );
  return {
    connect: resolveConnect(options, what, defaultName, connectTimeoutMs),
    connectTimeoutMs,
    operationTimeoutMs,
  };
}

function resolveConnect(
  options: ConnectionOptions,
  what: string,
  defaultName: string,
  connectTimeoutMs: number,
): AmqpConnect {
  const { url, connect } = options;
  if ((url === undefined) === (connect === undefined)) {
    throw new ConfigurationError(`${what}: give exactly one of url or connect`);
  }
  if (connect !== undefined) {
    if (typeof connect !== 'function') {
      throw new ConfigurationError(`${what}: connect must be a function`);
    }
    return connect;
  }
  if (typeof url === 'string') {
    if (!/^amqps?:\/\//i.test(url)) {
      throw new ConfigurationError(`${what}: url must start with amqp:// or amqps://`);
    }
  } else if (typeof url !== 'object' || url === null) {
    throw new ConfigurationError(`${what}: url must be a string or an amqplib connect object`);
  }
  const heartbeat = options.heartbeatSeconds ?? CONNECTION_DEFAULTS.heartbeatSeconds;
  if (!Number.isInteger(heartbeat) || heartbeat < 0) {
    throw new ConfigurationError(`${what}: heartbeatSeconds must be a non-negative integer`, {
      heartbeatSeconds: heartbeat,
    });
  }
  const name = options.connectionName ?? defaultName;
  if (typeof name !== 'string' || name === '') {
    throw new ConfigurationError(`${what}: connectionName must be a non-empty string`);
  }
  const target: string | Options.Connect =
    typeof url === 'string'
      ? withHeartbeat(url, heartbeat)
      : { ...(url as Options.Connect), heartbeat: (url as Options.Connect).heartbeat ?? heartbeat };
  // amqplib's socket `timeout` bounds the handshake's silences; openSession bounds the whole.
  return () =>
    amqpConnect(target, { clientProperties: { connection_name: name }, timeout: connectTimeoutMs });
}

function withHeartbeat(url: string, heartbeat: number): string {
  if (/[?&]heartbeat=/.test(url)) return url;
  return `${url}${url.includes('?') ? '&' : '?'}heartbeat=${heartbeat}`;
}

/**
 * One live connection with one confirm channel. Everything a consumer or publisher does
 * goes through this object, so amqplib stays behind a narrow seam. @internal
 */
export interface AmqpSession {
  readonly channel: ConfirmChannel;
  /** True once the channel or the connection is gone. */
  readonly lost: boolean;
  /** Resolves (never rejects) with the cause once the channel or connection is gone. */
  readonly whenLost: Promise<Error>;
  /**
   * `work` (a call on this session's channels) within the operation time limit. When the
   * limit fires the session is destroyed and the call rejects with a
   * {@link RabbitConnectionError}: a broker that does not answer is presumed unreachable.
   */
  bounded<T>(what: string, work: Promise<T>): Promise<T>;
  /**
   * Whether an exchange exists, asked on a short-lived channel of its own: the broker closes
   * a channel that checks a missing exchange, and that must not be the working channel.
   */
  exchangeExists(name: string): Promise<boolean>;
  /**
   * Ends the connection at once, without the closing handshake (the socket is destroyed):
   * for a connection that stopped answering, whose handshake would never complete.
   */
  destroy(cause: Error): void;
  /** Closes the channel and the connection; never throws. */
  close(): Promise<void>;
}

/** Opens a connection and a confirm channel, each within its limit, and watches both. @internal */
export async function openSession(settings: ConnectionSettings): Promise<AmqpSession> {
  const { connectTimeoutMs, operationTimeoutMs } = settings;
  const deadline = Date.now() + connectTimeoutMs;
  const tooSlow = (step: string) => () =>
    new RabbitConnectionError(
      `${step} took longer than connectTimeoutMs (${connectTimeoutMs} ms)`,
      {
        details: { connectTimeoutMs },
      },
    );
  let model: ChannelModel;
  try {
    model = await withTimeout(
      Promise.resolve().then(settings.connect),
      connectTimeoutMs,
      tooSlow('connecting to RabbitMQ'),
      (late) => void late.close().catch(() => undefined),
    );
  } catch (error) {
    throw new RabbitConnectionError(`cannot connect to RabbitMQ: ${errorMessage(error)}`, {
      cause: error,
    });
  }
  let lost = false;
  let markLost: (error: Error) => void = () => undefined;
  const whenLost = new Promise<Error>((resolve) => {
    markLost = (error) => {
      if (lost) return;
      lost = true;
      resolve(error);
    };
  });
  // amqplib emits 'error' before 'close'; without a listener an 'error' would crash the process.
  model.on('error', (error: unknown) => markLost(asError(error ?? 'connection error')));
  model.on('close', (error: unknown) => markLost(asError(error ?? 'connection closed')));
  const destroy = (cause: Error): void => {
    markLost(cause);
    // With an error, so that amqplib closes its channels and fails their pending confirms.
    socketOf(model)?.destroy(cause);
  };

  let channel: ConfirmChannel;
  try {
    channel = await withTimeout(
      model.createConfirmChannel(),
      Math.max(1, deadline - Date.now()),
      tooSlow('opening a channel'),
    );
  } catch (error) {
    destroy(asError(error ?? 'cannot open a channel'));
    throw new RabbitConnectionError(`cannot open a channel: ${errorMessage(error)}`, {
      cause: error,
    });
  }
  channel.on('error', (error: unknown) => markLost(asError(error ?? 'channel error')));
  channel.on('close', () => markLost(new Error('channel closed')));
  let closing: Promise<void> | undefined;

  function bounded<T>(what: string, work: Promise<T>): Promise<T> {
    return withTimeout(work, operationTimeoutMs, () => {
      const error = new RabbitConnectionError(
        `${what}: no answer from RabbitMQ within operationTimeoutMs (${operationTimeoutMs} ms)`,
        { details: { operationTimeoutMs } },
      );
      destroy(error);
      return error;
    });
  }

  return {
    channel,
    get lost() {
      return lost;
    },
    whenLost,
    bounded,
    async exchangeExists(name) {
      const probe = await bounded('opening a channel', model.createChannel());
      probe.on('error', () => undefined);
      try {
        await bounded(`checking exchange "${name}"`, probe.checkExchange(name));
        await probe.close().catch(() => undefined);
        return true;
      } catch (error) {
        if ((error as { code?: unknown }).code === NOT_FOUND) return false;
        throw error;
      }
    },
    destroy,
    close() {
      markLost(new Error('closed by the application'));
      // The channel first: amqplib interleaves the frames of its channels, so closing the
      // connection at once could overtake acknowledgements still buffered on the channel,
      // while the channel's close-ok proves the broker has processed them. One close,
      // shared by every caller; a broker that does not answer gets its socket destroyed.
      closing ??= withTimeout(
        channel
          .close()
          .catch(() => undefined)
          .then(() => model.close())
          .catch(() => undefined),
        operationTimeoutMs,
        () => new Error('RabbitMQ did not answer the close in time'),
      ).catch((error: unknown) => socketOf(model)?.destroy(asError(error ?? 'close timed out')));
      return closing;
    },
  };
}

/**
 * The socket under an amqplib connection. Not in amqplib's types, but the only way to end a
 * connection whose peer stopped answering: `close()` would wait for a close-ok forever.
 */
function socketOf(model: ChannelModel): { destroy(error: Error): void } | undefined {
  const stream = (model.connection as unknown as { stream?: unknown } | undefined)?.stream;
  return typeof (stream as { destroy?: unknown } | undefined)?.destroy === 'function'
    ? (stream as { destroy(error: Error): void })
    : undefined;
}

/** AMQP reply code for a missing queue or exchange. */
const NOT_FOUND = 404;
