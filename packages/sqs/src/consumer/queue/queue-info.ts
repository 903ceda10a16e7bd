import { GetQueueAttributesCommand, GetQueueUrlCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { ConfigurationError } from '@justonce/core';
import { SqsQueueError } from '../../errors/queue-error';
import { isFifoQueue, parseQueueArn } from '../../client/queue-names';
import { errorName } from '../../client/request-errors';
import { timeLimited } from '../../client/time-limits';
import type { SqsQueueInfo } from '../types';

interface RedrivePolicy {
  readonly deadLetterTargetArn: string;
  readonly maxReceiveCount: number;
}

function parseRedrivePolicy(text: string | undefined): RedrivePolicy | undefined {
  if (text === undefined || text === '') return undefined;
  try {
    const parsed = JSON.parse(text) as { deadLetterTargetArn?: unknown; maxReceiveCount?: unknown };
    const maxReceiveCount = Number(parsed.maxReceiveCount);
    if (typeof parsed.deadLetterTargetArn !== 'string' || !Number.isInteger(maxReceiveCount)) {
      return undefined;
    }
    return { deadLetterTargetArn: parsed.deadLetterTargetArn, maxReceiveCount };
  } catch {
    return undefined;
  }
}

/**
 * Reads what the consumer needs to know about its queue, and finds the dead-letter queue:
 * the one given, else the target of the queue's redrive policy. Each call is limited to
 * `requestMs`. @internal
 */
export async function describeQueue(
  client: SQSClient,
  queueUrl: string,
  deadLetterQueueUrl: string | undefined,
  requestMs: number,
): Promise<SqsQueueInfo> {
  let attributes: Record<string, string>;
  try {
    const response = await timeLimited('GetQueueAttributes', requestMs, (signal) =>
      client.send(new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['All'] }), {
        abortSignal: signal,
      }),
    );
    attributes = response.Attributes ?? {};
  } catch (error) {
    throw new SqsQueueError(
      `cannot describe queue ${queueUrl} (${errorName(error)})`,
      { queueUrl },
      error,
    );
  }
  const fifo = attributes.FifoQueue === 'true';
  const redrive = parseRedrivePolicy(attributes.RedrivePolicy);
  let dlq = deadLetterQueueUrl;
  if (dlq === undefined && redrive !== undefined) {
    const target = parseQueueArn(redrive.deadLetterTargetArn);
    if (target === undefined) {
      throw new SqsQueueError(
        `the redrive policy of ${queueUrl} names no queue ARN`,
        { queueUrl, deadLetterTargetArn: redrive.deadLetterTargetArn },
        undefined,
      );
    }
    try {
      const response = await timeLimited('GetQueueUrl', requestMs, (signal) =>
        client.send(new GetQueueUrlCommand({ QueueName: target.name }), { abortSignal: signal }),
      );
      dlq = response.QueueUrl;
    } catch (error) {
      throw new SqsQueueError(
        `cannot find the dead-letter queue ${target.name} of ${queueUrl} (${errorName(error)})`,
        { queueUrl, deadLetterQueue: target.name },
        error,
      );
    }
  }
  if (dlq !== undefined && isFifoQueue(dlq) !== fifo) {
    throw new ConfigurationError(
      `the dead-letter queue of a ${fifo ? 'FIFO' : 'standard'} queue must be a ${fifo ? 'FIFO' : 'standard'} queue`,
      { queueUrl, deadLetterQueueUrl: dlq },
    );
  }
  return {
    queueUrl,
    fifo,
    visibilityTimeoutSeconds: Number(attributes.VisibilityTimeout ?? 30),
    retentionSeconds: Number(attributes.MessageRetentionPeriod ?? 345_600),
    maxReceiveCount: redrive?.maxReceiveCount,
    deadLetterQueueUrl: dlq,
  };
}
