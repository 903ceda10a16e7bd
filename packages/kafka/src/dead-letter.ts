import type { KafkaProducerClient, KafkaRecord } from './client';
import { DEAD_LETTER_HEADERS } from './headers';
import { DeadLetterPublishError } from './errors';

/** Names the dead-letter topic of a source topic. */
export type DeadLetterTopicName = string | ((sourceTopic: string) => string);

/** The default dead-letter topic: `<topic>.dlq`. */
export function defaultDeadLetterTopic(sourceTopic: string): string {
  return `${sourceTopic}.dlq`;
}

/** Why a record is being dead-lettered, from the inbox's `dead-lettered` outcome. */
export interface DeadLetterReason {
  readonly reason: string;
  readonly error: Error;
  readonly attempt: number;
  readonly deadLetterId: string;
  readonly consumer: string;
}

const MAX_ERROR_LENGTH = 1000;

/**
 * The record written to the dead-letter topic: the original key, value and headers, plus
 * headers giving the reason and the original topic, partition and offset.
 */
export function deadLetterRecord(
  record: KafkaRecord,
  topic: string,
  partition: number,
  why: DeadLetterReason,
): { key: Buffer | null; value: Buffer | null; headers: Record<string, Buffer | string> } {
  const headers: Record<string, Buffer | string> = {};
  for (const [name, value] of Object.entries(record.headers ?? {})) {
    const last: unknown = Array.isArray(value) ? value[value.length - 1] : value;
    // The original bytes, exactly: U+0000 or invalid UTF-8 are no obstacle to Kafka.
    const kept =
      typeof last === 'string' || Buffer.isBuffer(last)
        ? last
        : last instanceof Uint8Array
          ? Buffer.from(last)
          : undefined;
    if (kept !== undefined) {
      // An own property even for `__proto__`, which a plain assignment would drop.
      Object.defineProperty(headers, name, {
        value: kept,
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
  }
  Object.assign(headers, {
    [DEAD_LETTER_HEADERS.reason]: why.reason,
    [DEAD_LETTER_HEADERS.error]: why.error.message.slice(0, MAX_ERROR_LENGTH),
    [DEAD_LETTER_HEADERS.originalTopic]: topic,
    [DEAD_LETTER_HEADERS.originalPartition]: String(partition),
    [DEAD_LETTER_HEADERS.originalOffset]: record.offset,
    [DEAD_LETTER_HEADERS.consumer]: why.consumer,
    [DEAD_LETTER_HEADERS.attempts]: String(why.attempt),
    [DEAD_LETTER_HEADERS.deadLetterId]: why.deadLetterId,
    [DEAD_LETTER_HEADERS.deadLetteredAt]: new Date().toISOString(),
  });
  return { key: record.key, value: record.value, headers };
}

/**
 * Sends a dead-lettered record to its dead-letter topic with acknowledgement from all
 * in-sync replicas. Rejects with {@link DeadLetterPublishError} when the broker does not
 * take it; the caller must then not commit the record's offset.
 */
export async function forwardToDeadLetterTopic(
  producer: KafkaProducerClient,
  topicName: DeadLetterTopicName,
  record: KafkaRecord,
  topic: string,
  partition: number,
  why: DeadLetterReason,
): Promise<string> {
  const deadLetterTopic = typeof topicName === 'function' ? topicName(topic) : topicName;
  try {
    await producer.send({
      topic: deadLetterTopic,
      acks: -1,
      messages: [deadLetterRecord(record, topic, partition, why)],
    });
    return deadLetterTopic;
  } catch (error) {
    throw new DeadLetterPublishError(
      `could not forward ${topic}/${partition}/${record.offset} to ${deadLetterTopic}`,
      { topic, partition, offset: record.offset, deadLetterTopic },
      error,
    );
  }
}
