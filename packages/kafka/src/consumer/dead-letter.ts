import { deadLetterHeaders, type DeadLetterFacts } from '@justonce/core/transport';
import type { KafkaProducerClient } from '../client/types';
import type { DeadLetterTopicName, KafkaDelivery } from './types';
import { DeadLetterPublishError } from '../errors';

/** The default dead-letter topic: `<topic>.dlq`. */
export function defaultDeadLetterTopic(sourceTopic: string): string {
  return `${sourceTopic}.dlq`;
}

/**
 * The record written to the dead-letter topic: the original key, value and headers (their
 * bytes exactly), plus core's dead-letter headers (`x-justonce-reason`, …) from `facts`,
 * which replace any original header of the same name.
 */
export function deadLetterRecord(
  delivery: KafkaDelivery,
  facts: DeadLetterFacts,
): { key: Buffer | null; value: Buffer | null; headers: Record<string, Buffer | string> } {
  const { record } = delivery;
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
    if (kept !== undefined) ownProperty(headers, name, kept);
  }
  for (const [name, value] of Object.entries(deadLetterHeaders(facts))) {
    ownProperty(headers, name, value);
  }
  return { key: record.key, value: record.value, headers };
}

/** Sets `name` as an own property even for `__proto__`, which a plain assignment would drop. */
function ownProperty(
  target: Record<string, Buffer | string>,
  name: string,
  value: Buffer | string,
) {
  Object.defineProperty(target, name, {
    value,
    enumerable: true,
    writable: true,
    configurable: true,
  });
}

/**
 * Sends a dead-lettered record to its dead-letter topic with acknowledgement from all
 * in-sync replicas. Rejects with {@link DeadLetterPublishError} when the broker does not
 * take it; the caller must then not commit the record's offset.
 */
export async function forwardToDeadLetterTopic(
  producer: KafkaProducerClient,
  topicName: DeadLetterTopicName,
  delivery: KafkaDelivery,
  facts: DeadLetterFacts,
): Promise<string> {
  const { topic, partition, record } = delivery;
  const deadLetterTopic = typeof topicName === 'function' ? topicName(topic) : topicName;
  try {
    await producer.send({
      topic: deadLetterTopic,
      acks: -1,
      messages: [deadLetterRecord(delivery, facts)],
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
