/** What the AWS SDK puts on the errors it throws. */
interface ServiceErrorShape {
  readonly name?: string;
  readonly $fault?: 'client' | 'server';
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
 * retryable. A client fault (bad parameters, missing queue) is not. @internal
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
