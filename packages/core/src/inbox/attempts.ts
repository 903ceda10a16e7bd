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

function count(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) && value > 0 ? Math.floor(value) : 0;
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
