import type { Inbox, Logger } from '@justonce/core';
import type { SqsQueueInfo } from '../types';

/**
 * Warns once, at start, when the inbox's `maxAttempts` is not below the queue's redrive
 * `maxReceiveCount`: SQS then moves a message that keeps failing (or keeps killing the
 * process) to its dead-letter queue before the inbox gives up on it, so the store never gets
 * the dead letter with its reason. Only a warning: the messages are still handled once each.
 * Nothing to compare without a redrive policy, or with an inbox of your own that does not
 * expose its settings (logged at debug). @internal
 */
export function checkRedrive(
  inbox: Pick<Inbox, 'settings'>,
  info: SqsQueueInfo,
  logger: Logger,
): void {
  const { maxReceiveCount, queueUrl } = info;
  if (maxReceiveCount === undefined) return;
  const maxAttempts = inbox.settings?.maxAttempts;
  if (maxAttempts === undefined) {
    logger.debug(
      "sqs consumer: the inbox does not expose its settings; maxAttempts not checked against the queue's maxReceiveCount",
      { queueUrl, maxReceiveCount },
    );
    return;
  }
  if (maxAttempts < maxReceiveCount) return;
  logger.warn(
    `sqs consumer: the inbox's maxAttempts (${maxAttempts}) is not below the queue's redrive maxReceiveCount (${maxReceiveCount}): ` +
      `SQS moves a message that keeps failing to its dead-letter queue before the inbox dead-letters it, and the store gets no dead letter. ` +
      `Set the inbox's maxAttempts to at most ${maxReceiveCount - 1}, or the queue's maxReceiveCount to at least ${maxAttempts + 1}.`,
    { queueUrl, maxAttempts, maxReceiveCount },
  );
}
