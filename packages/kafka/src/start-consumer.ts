import { ConsumerStateError } from '@justonce/core/transport';
import type { ConsumerRuntime } from './consumer-runtime';
import { watchConsumerOutages } from './consumer-outage';

/**
 * The `start` hook of the consumer's lifecycle: connects the dead-letter producer (unless the
 * caller gave one), then the consumer, joins the group and runs it. A `stop()` during any of
 * these steps makes the next one throw; the lifecycle then calls the stop hook, which closes
 * what was opened. @internal
 */
export async function startConsumer<R>(runtime: ConsumerRuntime<R>): Promise<void> {
  const { options } = runtime;
  const owned = options.deadLetterProducer === undefined;
  runtime.producer =
    options.deadLetterProducer ?? options.kafka.producer({ retry: { retries: 5 } });
  if (owned) await runtime.producer.connect();
  stillStarting(runtime);
  const consumer = options.kafka.consumer(options.consumerConfig);
  runtime.consumer = consumer;
  runtime.unsubscribe.push(
    consumer.on(consumer.events.GROUP_JOIN ?? 'consumer.group_join', () => {
      runtime.generation += 1;
      // Partitions may have moved: forget retry positions and what decides first
      // deliveries, so each partition's first chunk after the join is counted again.
      runtime.processor.reset();
    }),
  );
  runtime.unsubscribe.push(
    ...watchConsumerOutages(consumer, { groupId: options.groupId, logger: options.logger }),
  );
  await consumer.connect();
  stillStarting(runtime);
  await consumer.subscribe({ topics: [...options.topics], fromBeginning: options.fromBeginning });
  stillStarting(runtime);
  await consumer.run({
    autoCommit: false,
    eachBatchAutoResolve: false,
    partitionsConsumedConcurrently: options.concurrency,
    eachBatch: (context) => runtime.processor.eachBatch(context),
  });
  stillStarting(runtime);
  options.logger.info('kafka inbox consumer started', {
    groupId: options.groupId,
    mode: options.mode,
  });
}

/** Throws when `stop()` was called while the start was under way. */
function stillStarting<R>(runtime: ConsumerRuntime<R>): void {
  if (runtime.stopRequested) throw new ConsumerStateError(runtime.name, 'stopping');
}
