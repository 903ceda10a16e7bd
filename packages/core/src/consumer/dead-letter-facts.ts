import type { InboxOutcome } from '../inbox/types';
import { errorText } from '../common/errors';
import type { DeliveryPosition } from '../transport/envelope';

/**
 * What every transport sends along with a dead letter, whatever the broker: why, after how
 * many attempts, where the letter is in the store, and where the message came from.
 */
export interface DeadLetterFacts {
  /** Short machine-readable reason: `MAX_ATTEMPTS`, `MISSING_MESSAGE_ID`, `PAYLOAD_CONFLICT`… */
  readonly reason: string;
  /** The error's code, when it has one. */
  readonly errorCode: string | undefined;
  /** The error's message, cut to 1 000 characters. */
  readonly error: string;
  /** Attempts made (0 for bad input that never reached a handler). */
  readonly attempts: number;
  /** The message id, when the message had a usable one. */
  readonly messageId: string | undefined;
  /** The scope (tenant). */
  readonly scope: string;
  /** The inbox's consumer name. */
  readonly consumer: string;
  /** The topic or queue the message came from. */
  readonly source: string;
  /** Id of the letter in the store's dead letters. */
  readonly deadLetterId: string;
  /** When the consumer forwarded it. */
  readonly at: Date;
  /**
   * Where the delivery sat in its broker (a Kafka record's topic, partition and offset, …),
   * when the transport put it in the envelope's `delivery.position`.
   */
  readonly position?: DeliveryPosition;
}

/**
 * The one header vocabulary for dead-letter facts, shared by every transport. `x-justonce-`
 * rather than `x-dead-letter-`, which RabbitMQ uses for its own queue arguments.
 */
export const DEAD_LETTER_HEADERS = {
  reason: 'x-justonce-reason',
  errorCode: 'x-justonce-error-code',
  error: 'x-justonce-error',
  attempts: 'x-justonce-attempts',
  messageId: 'x-justonce-message-id',
  scope: 'x-justonce-scope',
  consumer: 'x-justonce-consumer',
  source: 'x-justonce-source',
  deadLetterId: 'x-justonce-dead-letter-id',
  at: 'x-justonce-dead-lettered-at',
} as const satisfies Record<Exclude<keyof DeadLetterFacts, 'position'>, string>;

/**
 * The headers of the position's fields ({@link DeadLetterFacts.position}), one per field. The
 * topic or queue is not repeated: `x-justonce-source` names it.
 */
export const DEAD_LETTER_POSITION_HEADERS = {
  partition: 'x-justonce-partition',
  offset: 'x-justonce-offset',
  brokerMessageId: 'x-justonce-broker-message-id',
  exchange: 'x-justonce-exchange',
  routingKey: 'x-justonce-routing-key',
} as const satisfies Record<Exclude<keyof DeliveryPosition, 'topic' | 'queue'>, string>;

/** The facts of a dead-lettered outcome. @internal */
export function deadLetterFacts(
  outcome: Extract<InboxOutcome, { status: 'dead-lettered' }>,
  where: { readonly consumer: string; readonly source: string },
  at: Date = new Date(),
): DeadLetterFacts {
  const code = (outcome.error as { code?: unknown }).code;
  return {
    reason: outcome.reason,
    errorCode: typeof code === 'string' ? code : undefined,
    error: errorText(outcome.error.message),
    attempts: outcome.attempt,
    messageId: outcome.messageId,
    scope: outcome.scope,
    consumer: where.consumer,
    source: where.source,
    deadLetterId: outcome.deadLetterId,
    at,
    ...(outcome.position === undefined ? {} : { position: outcome.position }),
  };
}

/**
 * The facts as headers (strings, {@link DEAD_LETTER_HEADERS} names, then the position's
 * fields besides its topic or queue under {@link DEAD_LETTER_POSITION_HEADERS} names), added
 * to the original message's own headers when it is forwarded. Facts without a value are left
 * out.
 */
export function deadLetterHeaders(facts: DeadLetterFacts): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const key of Object.keys(DEAD_LETTER_HEADERS) as Array<keyof typeof DEAD_LETTER_HEADERS>) {
    const value = facts[key];
    if (value === undefined) continue;
    headers[DEAD_LETTER_HEADERS[key]] = value instanceof Date ? value.toISOString() : String(value);
  }
  const position = facts.position ?? {};
  const names = Object.keys(DEAD_LETTER_POSITION_HEADERS);
  for (const key of names as Array<keyof typeof DEAD_LETTER_POSITION_HEADERS>) {
    const value = position[key];
    if (value !== undefined) headers[DEAD_LETTER_POSITION_HEADERS[key]] = String(value);
  }
  return headers;
}
