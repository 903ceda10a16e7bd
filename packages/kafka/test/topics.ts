/**
 * Topic creation for tests. A module of its own (like `fast-group.ts`) so that code outside
 * Jest (the crash-point matrix's script) can use it without the test support's hooks.
 */
import type { Admin } from 'kafkajs';
import { waitFor } from '../../../test-support/wait-for';

/**
 * Creates topics and waits until the broker's metadata shows a leader for every partition.
 * kafkajs's own wait (`waitForLeaders`) retries only LEADER_NOT_AVAILABLE; on a busy broker
 * the metadata of a topic just created can still answer UNKNOWN_TOPIC_OR_PARTITION ("This
 * server does not host this topic-partition"), which would fail a test before its consumer
 * even started.
 */
export async function createTopics(
  admin: Admin,
  topics: string[],
  numPartitions = 1,
): Promise<void> {
  await admin
    .createTopics({
      waitForLeaders: true,
      topics: topics.map((topic) => ({ topic, numPartitions, replicationFactor: 1 })),
    })
    .catch((error: unknown) => {
      if ((error as { type?: unknown }).type !== 'UNKNOWN_TOPIC_OR_PARTITION') throw error;
    });
  const ready = async (): Promise<boolean> => {
    try {
      const { topics: found } = await admin.fetchTopicMetadata({ topics });
      return found.every(
        (t) => t.partitions.length === numPartitions && t.partitions.every((p) => p.leader >= 0),
      );
    } catch {
      return false;
    }
  };
  await waitFor(`topics ${topics.join(', ')} ready`, ready, { timeoutMs: 20_000, intervalMs: 50 });
}
