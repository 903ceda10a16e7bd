import { optionKeys, rejectUnknownOptions } from '../config/options';
import { ConfigurationError } from '../errors/configuration-error';
import type { Handler, HandlerContext } from './types';
import type { KnexTransaction } from '../transactions/types';
import { UnknownMessageTypeError } from '../messages/errors/unknown-message-type-error';
import {
  MESSAGE_TYPE_HEADER,
  isMessageType,
  type MessageData,
  type MessageType,
} from '../messages/message-type';
import { readPayload } from '../messages/read-body';
import { validatePayload } from '../messages/validate';

/** One message type and the handler of its deliveries; made by {@link on}. */
export interface MessageRoute<Tx = KnexTransaction> {
  /** The message type the route handles. */
  readonly message: MessageType;
  /**
   * Reads the payload of `ctx` (see {@link messageHandler}), validates it with the message
   * type's schema and runs the route's handler with the schema's output. A body that is not
   * JSON, or fails the schema, is an `InvalidPayloadError` and the handler does not run.
   */
  handle(ctx: HandlerContext<Tx>): Promise<unknown>;
}

/** What {@link messageHandler} does with a message no route handles (or without a type). */
export type UnknownTypePolicy<Tx = KnexTransaction> =
  'dead-letter' | 'acknowledge' | Handler<unknown, Tx>;

/** Options of {@link messageHandler}. */
export interface MessageHandlerOptions<Tx = KnexTransaction> {
  /** The routes, one per message type ({@link on}); at least one, no type twice. */
  readonly routes: readonly MessageRoute<Tx>[];
  /**
   * A message without a `type` header, or of a type no route handles:
   * - `'dead-letter'` (default): throw `UnknownMessageTypeError`, so the inbox dead-letters it
   *   at once with reason `UNKNOWN_MESSAGE_TYPE`;
   * - `'acknowledge'`: return `undefined` without doing anything; the inbox records the
   *   message as processed and the transport acknowledges it;
   * - a handler: run it instead, with the same context.
   */
  readonly unknownType?: UnknownTypePolicy<Tx>;
}

const HANDLER_KEYS = optionKeys<MessageHandlerOptions<unknown>>()(['routes', 'unknownType']);

/**
 * A route for {@link messageHandler}: deliveries of `message`'s type are validated with its
 * schema and `handler` gets the schema's output, typed as {@link MessageData}, and the inbox's
 * context (`ctx.trx`, `ctx.outbox`, …). What `handler` returns becomes the outcome's result.
 *
 * @example
 * ```ts
 * on(OrderCreated, async (order, ctx) => {
 *   await ctx.trx('orders').insert({ id: order.orderId, total: order.total });
 * });
 * ```
 */
export function on<M extends MessageType, R, Tx = KnexTransaction>(
  message: M,
  handler: (data: MessageData<M>, ctx: HandlerContext<Tx>) => Promise<R>,
): MessageRoute<Tx> {
  if (!isMessageType(message)) {
    throw new ConfigurationError('on: message must be a message type made by defineMessage', {
      message: message === null ? 'null' : typeof message,
    });
  }
  if (typeof handler !== 'function') {
    throw new ConfigurationError('on: handler must be a function', { handler: typeof handler });
  }
  const route: MessageRoute<Tx> = {
    message,
    async handle(ctx: HandlerContext<Tx>): Promise<unknown> {
      const payload = readPayload(ctx.payload, message.type);
      const validation = await validatePayload(message, payload);
      if (!validation.ok) throw validation.error;
      // `validatePayload` answers with the output of `message.schema`: `MessageData<M>`.
      return handler(validation.value as MessageData<M>, ctx);
    },
  };
  return Object.freeze(route);
}

/** The header's value by exact name, else by any spelling of it (`Type`, `TYPE`). */
function typeOf(headers: Readonly<Record<string, string>>): string | undefined {
  const direct = headers[MESSAGE_TYPE_HEADER];
  if (typeof direct === 'string') return direct;
  for (const [name, value] of Object.entries(headers)) {
    if (name.toLowerCase() === MESSAGE_TYPE_HEADER && typeof value === 'string') return value;
  }
  return undefined;
}

function routeTable<Tx>(value: unknown): Map<string, MessageRoute<Tx>> {
  if (!Array.isArray(value) || value.length === 0) {
    throw new ConfigurationError('messageHandler: routes must be a non-empty array of on(...)', {
      routes: Array.isArray(value) ? 'empty array' : value === null ? 'null' : typeof value,
    });
  }
  const table = new Map<string, MessageRoute<Tx>>();
  for (const [index, route] of (value as readonly unknown[]).entries()) {
    if (!isRoute<Tx>(route)) {
      throw new ConfigurationError(`messageHandler: routes[${index}] is not a route made by on()`, {
        index,
      });
    }
    const { type } = route.message;
    if (table.has(type)) {
      throw new ConfigurationError(
        `messageHandler: two routes for message type "${type}"; give each type one route`,
        { type, index },
      );
    }
    table.set(type, route);
  }
  return table;
}

/** A route: a message type from `defineMessage` (of any copy of the package) and `handle`. */
function isRoute<Tx>(value: unknown): value is MessageRoute<Tx> {
  if (typeof value !== 'object' || value === null) return false;
  const route = value as { message?: unknown; handle?: unknown };
  return isMessageType(route.message) && typeof route.handle === 'function';
}

function unknownTypePolicy<Tx>(value: unknown): UnknownTypePolicy<Tx> {
  if (value === undefined) return 'dead-letter';
  if (value === 'dead-letter' || value === 'acknowledge' || typeof value === 'function') {
    return value as UnknownTypePolicy<Tx>;
  }
  throw new ConfigurationError(
    "messageHandler: unknownType must be 'dead-letter', 'acknowledge' or a handler",
    { unknownType: typeof value === 'string' ? value.slice(0, 100) : typeof value },
  );
}

/**
 * One inbox {@link Handler} for many message types, routed by the `type` header: the route of
 * the message's type reads its payload, validates it with the type's schema and runs its
 * handler with the output.
 *
 * The payload is read from `ctx.payload`: without a `decode` option on the inbox that is the
 * body as delivered, bytes or a string, parsed as UTF-8 JSON; a `decode` option that returns
 * bytes or a string (decompressed, decrypted) is parsed the same way, and one that returns
 * anything else has parsed the body already, so its value is validated as it is.
 *
 * A body that is not JSON or fails the schema throws `InvalidPayloadError` (the inbox
 * dead-letters the message with reason `INVALID_PAYLOAD`); a missing or unrouted type is
 * handled by `unknownType`. Whatever the validator itself throws, and whatever a route's
 * handler throws, is the inbox's to classify as for any handler. Options are checked here:
 * a bad or unknown option, a route not made by {@link on}, or two routes for one type are a
 * {@link ConfigurationError}.
 *
 * @example
 * ```ts
 * const handler = messageHandler({
 *   routes: [on(OrderCreated, async (order, ctx) => { ... }), on(OrderPaid, ...)],
 * });
 * await broker.consume('orders', { inbox, handler }).start();
 * ```
 */
export function messageHandler<Tx = KnexTransaction>(
  options: MessageHandlerOptions<Tx>,
): Handler<unknown, Tx> {
  rejectUnknownOptions(options, HANDLER_KEYS, 'messageHandler');
  const routes = routeTable<Tx>(options.routes);
  const unknownType = unknownTypePolicy<Tx>(options.unknownType);
  const known = [...routes.keys()];
  return async (ctx: HandlerContext<Tx>): Promise<unknown> => {
    const type = typeOf(ctx.message.headers);
    const route = type === undefined ? undefined : routes.get(type);
    if (route !== undefined) return route.handle(ctx);
    if (unknownType === 'acknowledge') return undefined;
    if (unknownType === 'dead-letter') throw new UnknownMessageTypeError(type, known);
    return unknownType(ctx);
  };
}
