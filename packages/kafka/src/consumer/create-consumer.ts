import type { KnexTransaction } from '@justonce/core';
import { consumerLifecycle } from '@justonce/core/transport';
import { resolveConsumerOptions } from './options';
import { createConsumerRuntime } from './runtime';
import type { KafkaConsumer, KafkaConsumerOptions } from './types';
import { startConsumer, stopConsumer } from './start-stop';

/**
 * Wraps a Kafka consumer group around an inbox: every record is handled in a database
 * transaction that also records its message id, and its offset is committed only after
 * that transaction committed. Failed records are retried after the inbox's delay by
 * pausing the partition (heartbeats go on); records the inbox dead-letters are forwarded
 * to the dead-letter topic with the original headers plus core's `DEAD_LETTER_HEADERS`,
 * then committed. Order within a partition is kept.
 *
 * `stop()` (drain, the default) lets the chunk in flight finish and commits it;
 * `stop({ drain: false })` aborts the handlers and commits nothing more: the records in
 * flight are delivered again (the inbox answers `duplicate` for those that committed).
 */
export function createKafkaConsumer<R = unknown, Tx = KnexTransaction>(
  options: KafkaConsumerOptions<R, Tx>,
): KafkaConsumer {
  // The consumer never touches the transaction: the inbox and the handler agree on Tx.
  const resolved = resolveConsumerOptions(options as unknown as KafkaConsumerOptions<R>);
  const runtime = createConsumerRuntime(resolved);
  const lifecycle = consumerLifecycle(`kafka consumer of group ${resolved.groupId}`, {
    start: () => startConsumer(runtime),
    stop: (stopOptions) => stopConsumer(runtime, stopOptions),
    inbox: resolved.inbox,
  });
  return {
    groupId: resolved.groupId,
    start: () => lifecycle.start(),
    stop: (stopOptions) => {
      // Tells a start under way to give up at its next step, instead of joining the group
      // only for the stop that waits on it to leave again.
      runtime.stopRequested = true;
      return lifecycle.stop(stopOptions);
    },
    get running() {
      return lifecycle.running;
    },
  };
}
