import { crashPoint } from '../common/crash-points';
import { hasErrorCode } from '../errors/justonce-error';
import { asError } from '../common/errors';
import type { InboxOutcome } from '../inbox/types';
import { fullJitterBackoff } from '../retry/backoff';
import { isCircuitOpenError } from '../retry/errors/circuit-open-error';
import { deadLetterFacts, type DeadLetterFacts } from './dead-letter-facts';

/**
 * What a consumer did with a delivery, in every transport's words:
 * - `acked`: handled or a duplicate; acknowledged (deleted, offset committed);
 * - `redelivered`: the handler failed; the broker delivers it again after `delayMs`
 *   (a retry queue, a visibility change, a paused partition);
 * - `dead-lettered`: forwarded to the broker's dead-letter destination, then acknowledged;
 * - `held`: the store (or a dependency the inbox's `classify` calls infrastructure) is down;
 *   the delivery stays in flight and is tried again in-process after `delayMs`, uncharged;
 * - `released`: given back to the broker unsettled (a stop without drain, a held delivery at
 *   stop, a failed forward), for another try;
 * - `abandoned`: the acknowledgement could not be sent (the channel or session is gone); the
 *   broker redelivers and the inbox answers with a duplicate.
 */
export type SettleAction =
  'acked' | 'redelivered' | 'dead-lettered' | 'held' | 'released' | 'abandoned';

/** Reported to a consumer's `onSettled` hook for every delivery, in every transport. */
export interface SettledEvent<R = unknown, M = unknown> {
  /** What the consumer did. */
  readonly action: SettleAction;
  /** The message id, when one was found. */
  readonly messageId: string | undefined;
  /** The inbox's outcome; absent when the inbox threw (the store was down). */
  readonly outcome?: InboxOutcome<R>;
  /** The wait before the next delivery, for `redelivered` and `held`. */
  readonly delayMs?: number;
  /** What went wrong, for `held`, `released`, `abandoned`. */
  readonly error?: Error;
  /** The facts sent with the dead letter, for `dead-lettered`. */
  readonly deadLetter?: DeadLetterFacts;
  /** The broker's own message (a Kafka record and its position, an SQS message, an AMQP message). */
  readonly message: M;
}

/** What the transport must do with a delivery: {@link decide}'s answer. */
export type Decision<R = unknown> =
  | { readonly kind: 'ack'; readonly outcome: InboxOutcome<R> }
  | { readonly kind: 'redeliver'; readonly outcome: InboxOutcome<R>; readonly delayMs: number }
  | {
      readonly kind: 'dead-letter';
      readonly outcome: InboxOutcome<R>;
      readonly facts: DeadLetterFacts;
    }
  | { readonly kind: 'hold'; readonly error: Error; readonly delayMs: number }
  | { readonly kind: 'release'; readonly error: Error };

/** Where the delivery came from, for the dead-letter facts. */
export interface DecisionContext {
  /** The inbox's consumer name. */
  readonly consumer: string;
  /** The topic or queue the delivery came from. */
  readonly source: string;
  /** Consecutive `hold` decisions for this delivery so far (the backoff grows with it). */
  readonly holds?: number;
  /** Backoff of held deliveries. Default base 200 ms, cap 5 000 ms. */
  readonly holdBackoff?: { readonly baseMs?: number; readonly capMs?: number };
}

/**
 * The one table from an inbox outcome to a broker action, shared by every transport:
 * processed and duplicate → ack; failed → redeliver after the inbox's delay; dead-lettered →
 * forward with the shared facts, then ack. Exhaustive, so a new outcome cannot be forgotten.
 */
export function decide<R>(outcome: InboxOutcome<R>, context: DecisionContext): Decision<R> {
  switch (outcome.status) {
    case 'processed':
    case 'duplicate':
      crashPoint('consumer.after-commit-before-ack');
      return { kind: 'ack', outcome };
    case 'failed':
      return { kind: 'redeliver', outcome, delayMs: Math.max(0, outcome.retryDelayMs) };
    case 'dead-lettered':
      return { kind: 'dead-letter', outcome, facts: deadLetterFacts(outcome, context) };
  }
}

/**
 * The inbox's sign of a store outage: `StoreUnavailableError`, or any error whose `code` is
 * `STORE_UNAVAILABLE` (an inbox of your own, or another copy of this package, may throw its
 * own).
 */
function isStoreUnavailable(error: unknown): boolean {
  if (hasErrorCode(error, 'STORE_UNAVAILABLE')) return true;
  return (
    typeof error === 'object' &&
    error !== null &&
    (error as { code?: unknown }).code === 'STORE_UNAVAILABLE'
  );
}

/**
 * The decision when `inbox.process` threw instead of answering: an outage of the store
 * (`STORE_UNAVAILABLE`) holds the delivery in flight and tries again after a growing,
 * jittered delay, charging nothing; so does an open circuit breaker (`CIRCUIT_OPEN`, the
 * `resilience` option), at the earliest when the breaker lets its probe through. Anything
 * else (a broken hook, a bug) releases it unacknowledged for the broker to deliver again;
 * the transport logs it.
 */
export function decideOnThrow(error: unknown, context: DecisionContext): Decision<never> {
  const open = isCircuitOpenError(error);
  if (!open && !isStoreUnavailable(error)) return { kind: 'release', error: asError(error) };
  const holds = (context.holds ?? 0) + 1;
  const backoff = fullJitterBackoff(holds, {
    baseMs: context.holdBackoff?.baseMs ?? 200,
    capMs: context.holdBackoff?.capMs ?? 5_000,
  });
  // Held deliveries spread out after the open interval, so one of them gets the probe.
  const delayMs = open ? error.retryAfterMs + backoff : backoff;
  return { kind: 'hold', error: asError(error), delayMs };
}
