import type { DeliveryFacts } from '../transport/envelope';

/** How the transport describes this delivery's place in the sequence of deliveries. @internal */
export interface DeliveryOrdinal {
  /** The transport reports first deliveries (a receive count or a redelivered flag). */
  readonly reported: boolean;
  /** The transport says this is the first delivery. */
  readonly first: boolean;
  /** The highest attempt number the transport's facts imply (0 when it has none). */
  readonly transportAttempt: number;
}

/**
 * Ceiling for a delivery count taken from the transport: far above any `maxAttempts` (at most
 * 1000), and far below the store's integer columns, which a broker's (or a caller's) count of
 * 2^31 would overflow on every delivery.
 */
const MAX_COUNT = 1_000_000;

function count(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) && value > 0
    ? Math.min(Math.floor(value), MAX_COUNT)
    : 0;
}

/**
 * Reads the delivery facts. Only a receive count and a redelivered flag say "first delivery":
 * both come from the broker and survive a consumer crash. `attempt` does not (a Kafka
 * consumer restarts it at 1 after a crash), so it only raises the attempt number. @internal
 */
export function deliveryOrdinal(facts: DeliveryFacts | undefined): DeliveryOrdinal {
  const receiveCount = count(facts?.receiveCount);
  const redelivered = facts?.redelivered;
  const hasCount = receiveCount > 0;
  const hasFlag = typeof redelivered === 'boolean';
  const reported = hasCount || hasFlag;
  const first = reported && (!hasCount || receiveCount === 1) && redelivered !== true;
  return { reported, first, transportAttempt: Math.max(receiveCount, count(facts?.attempt)) };
}
