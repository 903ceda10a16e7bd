import {
  ConsumerStateError,
  driveIntake,
  errorMessage,
  type ConsumerStopOptions,
} from '@justonce/core/transport';
import type { ConsumerRuntime } from './runtime';
import { watchConsumerOutages } from './outage';

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
    // Logs each breaker open once; the held records' partitions are paused by the processor.
    driveIntake(options.inbox, { logger: options.logger }),
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

/** `setTimeout` fires at once for delays above this; a longer drain waits this long. */
const MAX_TIMER_MS = 2_147_483_647;

/**
 * The `stop` hook of the consumer's lifecycle. With `drain`, the chunk in flight of every
 * partition finishes and its offset is committed, for at most `timeoutMs`; after that (or at
 * once without `drain`) the batches are halted: handlers see their signal abort, nothing
 * more is committed, and the records in flight are delivered again to the next owner. Then
 * the member leaves the group and the connections close. @internal
 */
export async function stopConsumer<R>(
  runtime: ConsumerRuntime<R>,
  options: Required<ConsumerStopOptions>,
): Promise<void> {
  const { processor, options: settings } = runtime;
  if (!options.drain) processor.halt('the consumer stopped without draining');
  const timer = options.drain
    ? setTimeout(
        () => processor.halt(`the consumer's drain exceeded ${options.timeoutMs} ms`),
        Math.min(Math.max(0, options.timeoutMs), MAX_TIMER_MS),
      )
    : undefined;
  for (const off of runtime.unsubscribe.splice(0)) off();
  let errors: unknown[];
  try {
    errors = await disconnect(runtime);
  } finally {
    clearTimeout(timer);
    processor.dispose();
  }
  if (errors.length > 0) {
    settings.logger.warn('kafka inbox consumer stopped with errors', {
      groupId: settings.groupId,
      errors: errors.map((error) => errorMessage(error)),
    });
  }
}

/** Disconnects whatever is connected; safe to call more than once. */
async function disconnect<R>(runtime: ConsumerRuntime<R>): Promise<unknown[]> {
  const errors: unknown[] = [];
  const consumer = runtime.consumer;
  runtime.consumer = undefined;
  // The consumer first: its disconnect waits for the batches in flight, which may still
  // need the dead-letter producer.
  if (consumer) await consumer.disconnect().catch((error: unknown) => errors.push(error));
  const producer = runtime.producer;
  runtime.producer = undefined;
  if (producer && runtime.options.deadLetterProducer === undefined) {
    await producer.disconnect().catch((error: unknown) => errors.push(error));
  }
  return errors;
}
