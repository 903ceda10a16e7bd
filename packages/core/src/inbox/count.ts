import type { DeliveryOrdinal } from './attempts';
import { deadLetterMessage } from './dead-letter';
import { MaxAttemptsExceededError } from './errors/max-attempts-exceeded-error';
import type { GoodDelivery } from './inspect-envelope';
import type { InboxRuntime } from './runtime';
import type { AttemptToCount } from './sql/count-attempts';
import type { InboxOutcome } from './types';

/**
 * Whether this delivery needs the durable counting write. A delivery the transport marks as
 * first may skip it: if it crashes the process, the broker's count (or redelivered flag)
 * says so on the next delivery, and {@link attemptToCount} starts that count at 2. @internal
 */
export function needsCounting(rt: InboxRuntime, ordinal: DeliveryOrdinal): boolean {
  return rt.options.alwaysCountAttempts || !ordinal.first;
}

/** The counter upsert for one delivery. @internal */
export function attemptToCount(
  rt: InboxRuntime,
  good: GoodDelivery,
  ordinal: DeliveryOrdinal,
): AttemptToCount {
  // When the transport reports first deliveries and this is not one, a first delivery
  // happened; if no counter exists, that delivery skipped counting and then crashed.
  const initial = !rt.options.alwaysCountAttempts && ordinal.reported ? 2 : 1;
  return { scope: good.scope, messageId: good.messageId, initial };
}

/** The attempt number: the durable count or the transport's, whichever is higher. @internal */
export function attemptNumber(stored: number | undefined, ordinal: DeliveryOrdinal): number {
  return Math.max(1, stored ?? 1, ordinal.transportAttempt);
}

/**
 * Dead-letters a message that has used up its attempts before its handler runs again (it
 * failed or crashed the process every time). @internal
 */
export function deadLetterExhausted(
  rt: InboxRuntime,
  good: GoodDelivery,
  attempt: number,
): Promise<InboxOutcome<never>> {
  const { maxAttempts } = rt.options;
  return deadLetterMessage(
    rt,
    good,
    'MAX_ATTEMPTS',
    attempt,
    (taken) =>
      new MaxAttemptsExceededError(
        attempt - 1,
        maxAttempts,
        undefined,
        taken?.lastError?.message ?? 'none recorded (the process may have died during the attempt)',
      ),
  );
}
