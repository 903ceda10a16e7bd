import type { Counter, Histogram } from '@opentelemetry/api';
import type { LogFields } from '../observability/logger';
import type { ResolvedInboxOptions } from './options';
import type { InboxOutcome } from './types';
import { textOf } from '../common/text';

/** The values of the `outcome` attribute of `justonce.inbox.messages`. */
const COUNTED_OUTCOMES = [
  'processed',
  'duplicate',
  'conflict',
  'retried',
  'dead_lettered',
] as const;

/** The `outcome` attribute of `justonce.inbox.messages`. */
export type CountedOutcome = (typeof COUNTED_OUTCOMES)[number];

/** Metrics and log lines of one inbox. @internal */
export interface Instruments {
  /** Counts and logs the outcome of one delivery; `body` is logged only with `logPayloads`. */
  outcome(outcome: InboxOutcome<unknown>, body: unknown): void;
  /** Records how long a handler ran, in seconds. */
  handlerDuration(seconds: number, succeeded: boolean): void;
  /** Counts and logs a delivery the store could not handle (nothing charged to the message). */
  storeUnavailable(error: unknown, messages: number, refunded: boolean): void;
}

function countedAs(outcome: InboxOutcome<unknown>): CountedOutcome {
  switch (outcome.status) {
    case 'processed':
      return 'processed';
    case 'duplicate':
      return 'duplicate';
    case 'failed':
      return 'retried';
    case 'dead-lettered':
      return outcome.reason === 'PAYLOAD_CONFLICT' ? 'conflict' : 'dead_lettered';
  }
}

/** Text bodies as they are, bytes as base64. */
function printable(body: unknown): string {
  if (typeof body === 'string') return body;
  if (body instanceof Uint8Array) return Buffer.from(body).toString('base64');
  return textOf(body);
}

function errorFields(error: Error): LogFields {
  const code = (error as { code?: unknown }).code;
  return {
    error: error.message,
    errorName: error.name,
    ...(code === undefined ? {} : { errorCode: code }),
  };
}

/** Creates the inbox's instruments on the configured meter and logger. @internal */
export function createInstruments(options: ResolvedInboxOptions): Instruments {
  const { meter } = options;
  const messages: Counter = meter.createCounter('justonce.inbox.messages', {
    description: 'Deliveries handled by the inbox, by outcome',
  });
  const duration: Histogram = meter.createHistogram('justonce.inbox.handler.duration', {
    description: 'How long inbox handlers ran, including failed runs',
    unit: 's',
  });
  const outages: Counter = meter.createCounter('justonce.inbox.store_unavailable', {
    description: 'Deliveries not handled because the store failed; never charged to the message',
  });
  const { consumer, logger, logPayloads } = options;
  // The counter's attributes, one object per outcome rather than one per message.
  const counterAttributes = Object.fromEntries(
    COUNTED_OUTCOMES.map((outcome) => [outcome, { consumer, outcome }]),
  ) as Record<CountedOutcome, { consumer: string; outcome: CountedOutcome }>;

  return {
    outcome(outcome, body) {
      const counted = countedAs(outcome);
      messages.add(1, counterAttributes[counted]);
      const fields: Record<string, unknown> = {
        consumer,
        scope: outcome.scope,
        messageId: outcome.messageId,
        outcome: counted,
      };
      if (logPayloads && body !== undefined) fields.body = printable(body);
      switch (outcome.status) {
        case 'processed':
          fields.attempt = outcome.attempt;
          logger.debug('inbox: message processed', fields);
          return;
        case 'duplicate':
          logger.debug('inbox: duplicate delivery acknowledged without handling', fields);
          return;
        case 'failed':
          logger.warn('inbox: handler failed; the message will be redelivered', {
            ...fields,
            attempt: outcome.attempt,
            retryDelayMs: outcome.retryDelayMs,
            ...errorFields(outcome.error),
          });
          return;
        case 'dead-lettered':
          logger.error('inbox: message dead-lettered', {
            ...fields,
            attempt: outcome.attempt,
            reason: outcome.reason,
            deadLetterId: outcome.deadLetterId,
            ...errorFields(outcome.error),
          });
          return;
      }
    },
    handlerDuration(seconds, succeeded) {
      duration.record(seconds, { consumer, succeeded });
    },
    storeUnavailable(error, messages, refunded) {
      outages.add(1, { consumer });
      logger.warn('inbox: the store failed; the delivery is not acknowledged and not charged', {
        consumer,
        messages,
        refunded,
        ...errorFields(error instanceof Error ? error : new Error(textOf(error))),
      });
    },
  };
}
