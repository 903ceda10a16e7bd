import { JustonceError } from '../../errors/justonce-error';

/**
 * Reported with a retriable `failed` outcome: this delivery's count passed `maxAttempts` a
 * moment after another delivery of the same message was counted and before that one
 * finished, so the count is made of copies delivered at the same time, not of failures. The
 * handler is not run, the attempt is given back, and the transport redelivers it after
 * `retryDelayMs`; by then the other copy has committed (this one is a duplicate) or failed.
 */
export class ConcurrentDeliveryError extends JustonceError {
  constructor(details: { readonly messageId: string; readonly attempt: number }) {
    super(
      'CONCURRENT_DELIVERY',
      `message "${details.messageId}" is being handled by another delivery; retry later`,
      { retriable: true, details },
    );
  }
}
