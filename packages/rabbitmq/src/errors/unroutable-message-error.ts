import { JustonceError } from '@justonce/core';

/**
 * The broker returned a message published with `mandatory`: no queue was bound to receive
 * it. Retriable, because a binding may appear later (a consumer that declares its queue
 * after the producer started); the relay keeps the event and tries again with backoff.
 */
export class UnroutableMessageError extends JustonceError {
  constructor(
    message: string,
    details: { exchange: string; routingKey: string; replyCode: number; replyText: string },
  ) {
    super('RABBIT_UNROUTABLE', message, { retriable: true, details });
  }
}
