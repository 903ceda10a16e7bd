import {
  connect as amqpConnect,
  type ChannelModel,
  type ConfirmChannel,
  type Options,
} from 'amqplib';
import { ConfigurationError } from '@justonce/core';
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
  /** Heartbeat in seconds, used only with `url`. Default 30. */
  readonly heartbeatSeconds?: number;
}

/** Validates connection options and returns the function that opens a connection. @internal */
export function resolveConnect(
  options: ConnectionOptions,
  what: string,
  defaultName: string,
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
  const heartbeat = options.heartbeatSeconds ?? 30;
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
  return () => amqpConnect(target, { clientProperties: { connection_name: name } });
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
   * Whether an exchange exists, asked on a short-lived channel of its own: the broker closes
   * a channel that checks a missing exchange, and that must not be the working channel.
   */
  exchangeExists(name: string): Promise<boolean>;
  /** Closes the channel and the connection; never throws. */
  close(): Promise<void>;
}

/** Opens a connection and a confirm channel and watches both for loss. @internal */
export async function openSession(connect: AmqpConnect): Promise<AmqpSession> {
  let model: ChannelModel;
  try {
    model = await connect();
  } catch (error) {
    throw new RabbitConnectionError(`cannot connect to RabbitMQ: ${describe(error)}`, {
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
  model.on('error', (error: unknown) => markLost(asError(error, 'connection error')));
  model.on('close', (error: unknown) => markLost(asError(error, 'connection closed')));

  let channel: ConfirmChannel;
  try {
    channel = await model.createConfirmChannel();
  } catch (error) {
    markLost(asError(error, 'cannot open a channel'));
    await model.close().catch(() => undefined);
    throw new RabbitConnectionError(`cannot open a channel: ${describe(error)}`, { cause: error });
  }
  channel.on('error', (error: unknown) => markLost(asError(error, 'channel error')));
  channel.on('close', () => markLost(new Error('channel closed')));
  let closing: Promise<void> | undefined;

  return {
    channel,
    get lost() {
      return lost;
    },
    whenLost,
    async exchangeExists(name) {
      const probe = await model.createChannel();
      probe.on('error', () => undefined);
      try {
        await probe.checkExchange(name);
        await probe.close().catch(() => undefined);
        return true;
      } catch (error) {
        if ((error as { code?: unknown }).code === NOT_FOUND) return false;
        throw error;
      }
    },
    close() {
      markLost(new Error('closed by the application'));
      // The channel first: amqplib interleaves the frames of its channels, so closing the
      // connection at once could overtake acknowledgements still buffered on the channel,
      // while the channel's close-ok proves the broker has processed them. One close,
      // shared by every caller.
      closing ??= Promise.race([
        channel
          .close()
          .catch(() => undefined)
          .then(() => model.close())
          .catch(() => undefined),
        closeDeadline(),
      ]);
      return closing;
    },
  };
}

/** How long closing waits for the broker's answer before giving up on a dead socket. */
const CLOSE_DEADLINE_MS = 5_000;

function closeDeadline(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, CLOSE_DEADLINE_MS).unref());
}

/** AMQP reply code for a missing queue or exchange. */
const NOT_FOUND = 404;

function asError(value: unknown, fallback: string): Error {
  if (value instanceof Error) return value;
  return new Error(value === undefined ? fallback : `${fallback}: ${String(value)}`);
}

/** A one-line description of an unknown thrown value. @internal */
export function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
