import type { GoodDelivery } from './inspect-envelope';
import type { InboxOutcome } from './types';

/**
 * The `failed` outcome of a delivery to be delivered again after `retryDelayMs`: a handler's
 * retriable failure, a copy refused while another attempt runs, a record held behind an
 * earlier one. @internal
 */
export function retryOutcome(
  good: GoodDelivery,
  attempt: number,
  error: Error,
  retryDelayMs: number,
): InboxOutcome<never> {
  return {
    status: 'failed',
    messageId: good.messageId,
    scope: good.scope,
    attempt,
    retriable: true,
    error,
    retryDelayMs,
  };
}
