import { JustonceError } from '../../errors/justonce-error';

/**
 * Reported with a retriable `failed` outcome in a watermark dedup mode: an earlier record of
 * the same partition in the batch failed, so this one was not handled (its effects would
 * sit above a watermark that must stay below the failed record). The handler did not run;
 * the transport delivers it again after the failed one, with `retryDelayMs` 0.
 */
export class EarlierRecordFailedError extends JustonceError {
  constructor(details: {
    readonly messageId: string;
    readonly topic: string;
    readonly partition: number;
    readonly failedOffset: string;
  }) {
    super(
      'EARLIER_RECORD_FAILED',
      `message "${details.messageId}" waits for offset ${details.failedOffset} of ${details.topic}/${details.partition}, which failed`,
      { retriable: true, details },
    );
  }
}
