import { ConfigurationError } from '../../errors/configuration-error';
import type { Envelope } from '../../transport/envelope';
import type { PartitionRef } from '../sql/offsets';

/** A delivery's place in its partition, as the watermark modes read it. @internal */
export interface Placed extends PartitionRef {
  readonly offset: bigint;
}

const MAX_OFFSET = 2n ** 63n - 1n;
const MAX_PARTITION = 2 ** 31 - 1;

/**
 * The delivery's `delivery.position` (`topic`, `partition`, `offset`), which a watermark mode
 * needs on every delivery. A missing or malformed one means the transport cannot feed a
 * watermark mode (it has no ordered log, or it is not set up to say where a record sat):
 * that is the inbox's configuration, not the message's fault, so it throws a
 * {@link ConfigurationError} instead of dead-lettering every message. @internal
 */
export function placeOf(envelope: Envelope, dedup: string): Placed {
  const position: unknown = envelope.delivery?.position;
  const p =
    typeof position === 'object' && position !== null ? (position as Record<string, unknown>) : {};
  const { topic, partition, offset } = p;
  const parsed = typeof offset === 'string' && /^\d{1,19}$/.test(offset) ? BigInt(offset) : -1n;
  if (
    typeof topic !== 'string' ||
    topic === '' ||
    typeof partition !== 'number' ||
    !Number.isInteger(partition) ||
    partition < 0 ||
    partition > MAX_PARTITION ||
    parsed < 0n ||
    parsed > MAX_OFFSET
  ) {
    throw new ConfigurationError(
      `dedup '${dedup}' needs every delivery's position (topic, partition and a decimal offset); use it with a transport that reads an ordered log, such as Kafka`,
      { topic, partition, offset },
    );
  }
  return { topic, partition, offset: parsed };
}
