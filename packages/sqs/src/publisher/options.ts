import { ConfigurationError, type Logger } from '@justonce/core';
import {
  integerOption,
  optionKeys,
  rejectUnknownOptions,
  resolveLogger,
} from '@justonce/core/transport';
import type { BodyEncoding } from '../client/body';
import { resolveTimeouts, type ResolvedTimeouts } from '../client/time-limits';
import type { SqsPublisherOptions } from './types';

/** {@link SqsPublisherOptions} checked, with defaults applied. @internal */
export interface ResolvedPublisherOptions {
  readonly maxMessageBytes: number;
  readonly bodyEncoding: BodyEncoding;
  readonly maxAttempts: number;
  readonly backoff: { readonly baseMs: number; readonly capMs: number };
  readonly concurrency: number;
  readonly timeouts: ResolvedTimeouts;
  readonly logger: Logger;
}

/** The largest message any SQS queue accepts (1 MiB). */
const MAX_MESSAGE_BYTES_LIMIT = 1_048_576;

const PUBLISHER_KEYS = optionKeys<SqsPublisherOptions>()([
  'client',
  'clientConfig',
  'maxMessageBytes',
  'bodyEncoding',
  'maxAttempts',
  'backoff',
  'concurrency',
  'logger',
  'timeouts',
]);
const BACKOFF_KEYS = optionKeys<NonNullable<SqsPublisherOptions['backoff']>>()(['baseMs', 'capMs']);

/** Validates publisher options; every problem is a {@link ConfigurationError}. @internal */
export function resolvePublisherOptions(options: SqsPublisherOptions): ResolvedPublisherOptions {
  rejectUnknownOptions(options, PUBLISHER_KEYS, 'createSqsPublisher');
  rejectUnknownOptions(options.backoff, BACKOFF_KEYS, 'createSqsPublisher', 'backoff');
  const bodyEncoding = options.bodyEncoding ?? 'utf8';
  if (bodyEncoding !== 'utf8' && bodyEncoding !== 'base64') {
    throw new ConfigurationError('bodyEncoding must be utf8 or base64', { bodyEncoding });
  }
  const logger = resolveLogger(options.logger);
  const baseMs = integerOption(options.backoff?.baseMs, 'backoff.baseMs', 50, 0, 60_000);
  const capMs = integerOption(options.backoff?.capMs, 'backoff.capMs', 1_000, baseMs, 300_000);
  return {
    maxMessageBytes: integerOption(
      options.maxMessageBytes,
      'maxMessageBytes',
      262_144,
      1_024,
      MAX_MESSAGE_BYTES_LIMIT,
    ),
    bodyEncoding,
    maxAttempts: integerOption(options.maxAttempts, 'maxAttempts', 3, 1, 20),
    backoff: { baseMs, capMs },
    concurrency: integerOption(options.concurrency, 'concurrency', 4, 1, 64),
    timeouts: resolveTimeouts(options.timeouts, 'createSqsPublisher'),
    logger,
  };
}
