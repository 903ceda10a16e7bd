import type { SqlRunner } from '../transactions/sql';
import type { DeadLetterReason } from '../dead-letters/types';
import { insertDeadLetter } from '../dead-letters/sql/insert-dead-letter';
import { storableDiagnostic, textOf } from '../common/text';
import type { DeliveryFacts, DeliveryPosition, Envelope } from '../transport/envelope';
import type { GoodDelivery } from './inspect-envelope';
import type { InboxRuntime } from './runtime';
import type { TakenAttempts } from './sql/take-attempts';
import type { InboxOutcome } from './types';

type Settled = InboxOutcome<never>;

/**
 * The delivery facts worth keeping, each of its own type; a transport's (or a caller's)
 * anything-goes object never reaches the store's JSON column as given. @internal
 */
export function deliveryOf(value: unknown): DeliveryFacts {
  if (typeof value !== 'object' || value === null) return {};
  const d = value as Record<keyof DeliveryFacts, unknown>;
  const count = (n: unknown): number | undefined =>
    typeof n === 'number' && Number.isFinite(n) ? n : undefined;
  const text = (t: unknown): string | undefined =>
    typeof t === 'string' ? storableDiagnostic(t) : undefined;
  const facts: Record<string, unknown> = {
    attempt: count(d.attempt),
    receiveCount: count(d.receiveCount),
    redelivered: typeof d.redelivered === 'boolean' ? d.redelivered : undefined,
    source: text(d.source),
    partition: count(d.partition),
    offset: text(d.offset),
    receivedAt:
      d.receivedAt instanceof Date && !Number.isNaN(d.receivedAt.getTime())
        ? d.receivedAt
        : undefined,
    position: positionOf(d.position),
  };
  for (const name of Object.keys(facts)) if (facts[name] === undefined) delete facts[name];
  return facts as DeliveryFacts;
}

/** The position's fields of their own types; `undefined` when none is left. */
function positionOf(value: unknown): DeliveryPosition | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const p = value as Record<keyof DeliveryPosition, unknown>;
  const text = (t: unknown): string | undefined =>
    typeof t === 'string' ? storableDiagnostic(t) : undefined;
  const fields: Record<string, unknown> = {
    topic: text(p.topic),
    partition: Number.isSafeInteger(p.partition) ? p.partition : undefined,
    offset: text(p.offset),
    queue: text(p.queue),
    brokerMessageId: text(p.brokerMessageId),
    exchange: text(p.exchange),
    routingKey: text(p.routingKey),
  };
  for (const name of Object.keys(fields)) if (fields[name] === undefined) delete fields[name];
  return Object.keys(fields).length === 0 ? undefined : (fields as DeliveryPosition);
}

/** The outcome's `position`: the delivery's, when it has one. @internal */
export function positionField(facts: DeliveryFacts): { position?: DeliveryPosition } {
  return facts.position === undefined ? {} : { position: facts.position };
}

/** The error's code as text, or null. @internal */
export function errorCode(error: Error): string | null {
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' ? code : code === undefined ? null : textOf(code);
}

/** The envelope's partition key, when it is text. @internal */
export function keyOfEnvelope(envelope: Envelope): string | null {
  return typeof envelope.key === 'string' ? envelope.key : null;
}

/** Writes the dead letter of a message with a usable id, in `tx`. @internal */
export async function writeLetter(
  rt: InboxRuntime,
  tx: SqlRunner,
  good: GoodDelivery,
  reason: DeadLetterReason,
  error: Error,
  attempt: number,
  taken: TakenAttempts | undefined,
): Promise<Settled> {
  const { store, consumer } = rt.options;
  const delivery = deliveryOf(good.envelope.delivery);
  const id = await insertDeadLetter(tx, store.names, {
    scope: good.scope,
    consumer,
    messageId: good.messageId,
    dedupe: true,
    fingerprint: good.fingerprint,
    reason,
    errorCode: errorCode(error),
    errorMessage: error.message,
    attempts: attempt,
    key: keyOfEnvelope(good.envelope),
    headers: good.headers,
    body: good.body,
    bodyIsText: good.bodyIsText,
    exactBody: good.inexactBody,
    delivery,
    firstAttemptAt: taken?.firstAttemptAt ?? null,
  });
  return {
    status: 'dead-lettered',
    messageId: good.messageId,
    scope: good.scope,
    attempt,
    reason,
    error,
    deadLetterId: id,
    ...positionField(delivery),
  };
}
