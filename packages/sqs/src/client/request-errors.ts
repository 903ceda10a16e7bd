/** What the AWS SDK puts on the errors it throws. */
interface ServiceErrorShape {
  readonly name?: string;
  readonly $fault?: 'client' | 'server';
  /** The SDK's RetryableTrait (@smithy/types), spelled as the SDK spells it. */
  readonly $retryable?: unknown;
  readonly $metadata?: unknown;
}

const THROTTLING = new Set([
  'RequestThrottled',
  'ThrottlingException',
  'Throttling',
  'KmsThrottled',
  'OverLimit',
  'TooManyRequestsException',
]);

/**
 * True when a whole SQS request failed in a way that sending it again may fix: a network
 * error (no service metadata), a server fault, throttling, or an error the SDK marks
 * retriable. A client fault (bad parameters, missing queue) is not. @internal
 */
export function isRetriableRequestError(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return true;
  const e = error as ServiceErrorShape;
  if (e.$retryable) return true;
  if (e.name !== undefined && THROTTLING.has(e.name)) return true;
  if (e.$fault === 'server') return true;
  return e.$metadata === undefined || e.$fault === undefined;
}

/** The error's name (the SQS error code for service errors). @internal */
export function errorName(error: unknown): string {
  return error instanceof Error ? error.name : typeof error;
}

/** The codes SQS (and ElasticMQ) give a call on a queue that does not exist. */
const QUEUE_MISSING = new Set(['QueueDoesNotExist', 'AWS.SimpleQueueService.NonExistentQueue']);

/**
 * True when the queue itself is missing: deleted, or gone with a broker restarted without
 * its data. That is the deployment's problem, never the message's. @internal
 */
export function isQueueMissing(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const e = error as { name?: unknown; Code?: unknown };
  return QUEUE_MISSING.has(String(e.name)) || QUEUE_MISSING.has(String(e.Code));
}

/**
 * True when a whole SQS request failed because of the network or the service (a time limit,
 * a lost connection, a server fault, throttling, the queue missing): an outage, never
 * charged to a message or an event. @internal
 */
export function isSqsOutage(error: unknown): boolean {
  return isRetriableRequestError(error) || isQueueMissing(error);
}
