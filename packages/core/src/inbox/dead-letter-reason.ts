import type { DeadLetterReason } from '../dead-letters/types';
import { isJustonceError } from '../errors/justonce-error';

/**
 * The reasons a handler's error may name for its own dead letter, instead of `NON_RETRIABLE`:
 * the bad-input errors of typed messages, and the resilience layer's `RetryBudgetSpentError`. The reasons the inbox decides itself (a conflict,
 * exhausted attempts, bad envelopes) cannot be claimed by an error.
 */
const CLAIMABLE: readonly DeadLetterReason[] = [
  'INVALID_PAYLOAD',
  'UNKNOWN_MESSAGE_TYPE',
  'RETRY_BUDGET_SPENT',
];

/**
 * Why a non-retriable handler error is dead-lettered: the `deadLetterReason` a justonce error
 * carries (`InvalidPayloadError` → `INVALID_PAYLOAD`, `UnknownMessageTypeError` →
 * `UNKNOWN_MESSAGE_TYPE`) when it is one an error may claim, else `NON_RETRIABLE`. Read by
 * marker, not `instanceof`, so errors of another copy of the package count too. @internal
 */
export function nonRetriableReason(error: unknown): DeadLetterReason {
  if (!isJustonceError(error)) return 'NON_RETRIABLE';
  const claimed = (error as { deadLetterReason?: unknown }).deadLetterReason;
  return CLAIMABLE.find((reason) => reason === claimed) ?? 'NON_RETRIABLE';
}
