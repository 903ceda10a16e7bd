import type { BadDelivery, GoodDelivery } from './inspect-envelope';
import { inspectEnvelope } from './inspect-envelope';
import { deadLetterBadInput, deadLetterMessage } from './dead-letter';
import { UndecodableBodyError } from './errors/undecodable-body-error';
import { deliveryOrdinal, type DeliveryOrdinal } from './attempts';
import type { InboxRuntime } from './runtime';
import type { Envelope } from '../transport/envelope';
import type { InboxOutcome } from './types';

/** A delivery ready for counting and handling. @internal */
export interface Prepared {
  readonly good: GoodDelivery;
  readonly payload: unknown;
  readonly ordinal: DeliveryOrdinal;
}

/**
 * Validates and decodes one delivery. Bad input never throws: it is dead-lettered here and
 * comes back as an outcome. Runs the `received` step for usable deliveries. @internal
 */
export async function prepare(
  rt: InboxRuntime,
  envelope: Envelope,
): Promise<Prepared | { readonly settled: InboxOutcome<never> }> {
  const inspected: GoodDelivery | BadDelivery = inspectEnvelope(envelope, rt.options);
  if (!inspected.ok) {
    return { settled: await deadLetterBadInput(rt, inspected) };
  }
  const good = inspected;
  await rt.step('received', good.messageId);
  const ordinal = deliveryOrdinal(envelope.delivery);
  const attempt = Math.max(1, ordinal.transportAttempt);
  if (good.inputError !== undefined) {
    const { reason, error } = good.inputError;
    return { settled: await deadLetterMessage(rt, good, reason, attempt, () => error) };
  }
  let payload: unknown = envelope.body;
  const { decode } = rt.options;
  if (decode !== undefined) {
    try {
      payload = await decode(envelope.body, envelope);
    } catch (cause) {
      const error = new UndecodableBodyError(cause, { consumer: rt.options.consumer });
      return {
        settled: await deadLetterMessage(rt, good, 'UNDECODABLE_BODY', attempt, () => error),
      };
    }
  }
  return { good, payload, ordinal };
}
