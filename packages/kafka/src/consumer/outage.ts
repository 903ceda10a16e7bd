import { errorMessage } from '@justonce/core/transport';
import type { Logger } from '@justonce/core';
import type { KafkaConsumerClient, KafkaInstrumentationEvent } from '../client/types';

/** kafkajs event names, used when the client's `events` map lacks one. */
const FALLBACK_EVENTS = {
  REQUEST_TIMEOUT: 'consumer.network.request_timeout',
  CRASH: 'consumer.crash',
  HEARTBEAT: 'consumer.heartbeat',
  FETCH: 'consumer.fetch',
  COMMIT_OFFSETS: 'consumer.commit_offsets',
  GROUP_JOIN: 'consumer.group_join',
} as const;

/** What {@link watchConsumerOutages} reports to. */
export interface OutageWatchOptions {
  readonly groupId: string;
  readonly logger: Logger;
  /** Milliseconds since the epoch; replaceable in tests. */
  readonly now?: () => number;
}

/**
 * Turns the consumer's instrumentation events into one warning per outage and one line when
 * it ends. kafkajs retries a broker it cannot reach on its own (and crashes and restarts the
 * consumer when its retries run out) without telling the application: a partition would
 * otherwise pass in silence. An outage starts at a request timeout or a crash, and ends at
 * the first sign that the group works again (a heartbeat, fetch, offset commit or join
 * answered). Returns the functions that unsubscribe.
 */
export function watchConsumerOutages(
  consumer: KafkaConsumerClient,
  options: OutageWatchOptions,
): Array<() => void> {
  const { groupId, logger } = options;
  const now = options.now ?? Date.now;
  let since: number | undefined;
  const name = (key: keyof typeof FALLBACK_EVENTS): string =>
    consumer.events[key] ?? FALLBACK_EVENTS[key];

  const down = (cause: string, detail: Record<string, unknown>): void => {
    if (since !== undefined) return;
    since = now();
    logger.warn('kafka consumer cannot reach the broker; kafkajs keeps retrying', {
      groupId,
      cause,
      ...detail,
    });
  };
  const up = (): void => {
    if (since === undefined) return;
    const outageMs = now() - since;
    since = undefined;
    logger.info('kafka consumer reaches the broker again', { groupId, outageMs });
  };

  const off = [
    consumer.on(name('REQUEST_TIMEOUT'), (event) =>
      down('request timed out', requestFields(event)),
    ),
    consumer.on(name('CRASH'), (event) => {
      const fields = crashFields(event);
      // The first crash of an outage is an error (the consumer stopped and is restarting, or
      // is gone for good); repeats while kafkajs restarts it into the same outage are not.
      if (since === undefined || fields.restart === false) {
        logger.error('kafka consumer crashed', { groupId, ...fields });
      }
      down('consumer crashed', fields);
    }),
  ];
  for (const key of ['HEARTBEAT', 'FETCH', 'COMMIT_OFFSETS', 'GROUP_JOIN'] as const) {
    off.push(consumer.on(name(key), up));
  }
  return off;
}

function requestFields(event: KafkaInstrumentationEvent): Record<string, unknown> {
  const payload = asRecord(event.payload);
  return { broker: payload.broker, apiName: payload.apiName };
}

function crashFields(event: KafkaInstrumentationEvent): {
  error: string;
  restart: unknown;
} {
  const payload = asRecord(event.payload);
  const error = payload.error;
  return {
    error: errorMessage(error),
    restart: payload.restart,
  };
}

function asRecord(value: unknown): Record<string, unknown> {
  return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : {};
}
