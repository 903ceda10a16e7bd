import { InvalidDestinationError } from '../errors';

/** Where one outbox event goes on the broker. */
export interface AmqpTarget {
  /** The exchange; `''` is the default exchange, which routes by queue name. */
  readonly exchange: string;
  /** The routing key (with the default exchange: the queue name). */
  readonly routingKey: string;
}

/** AMQP short strings (exchange names, routing keys) hold at most 255 bytes. */
const MAX_SHORT_STRING_BYTES = 255;

/**
 * Reads an outbox `destination` as an AMQP target:
 * - `"orders"` — no slash: the queue `orders`, through the default exchange;
 * - `"events/order.created"` — `exchange/routingKey`: split at the first slash, so the
 *   routing key may itself contain slashes;
 * - `"events/"` — the exchange `events` with an empty routing key (fanout exchanges);
 * - `"/orders"` — the default exchange with routing key `orders` (same as `"orders"`).
 *
 * Names are limited to 255 bytes; exchange names cannot contain `/`; an empty destination
 * and `"/"` are refused. Throws {@link InvalidDestinationError}.
 */
export function parseDestination(destination: string): AmqpTarget {
  if (typeof destination !== 'string' || destination === '') {
    throw new InvalidDestinationError('the destination is empty', String(destination));
  }
  const slash = destination.indexOf('/');
  const target =
    slash < 0
      ? { exchange: '', routingKey: destination }
      : { exchange: destination.slice(0, slash), routingKey: destination.slice(slash + 1) };
  if (target.exchange === '' && target.routingKey === '') {
    throw new InvalidDestinationError(
      'the destination names neither an exchange nor a queue',
      destination,
    );
  }
  for (const [what, value] of [
    ['exchange', target.exchange],
    ['routing key', target.routingKey],
  ] as const) {
    if (Buffer.byteLength(value, 'utf8') > MAX_SHORT_STRING_BYTES) {
      throw new InvalidDestinationError(
        `the ${what} is longer than ${MAX_SHORT_STRING_BYTES} bytes`,
        destination,
      );
    }
  }
  return target;
}
