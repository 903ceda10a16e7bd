import { errorMessage } from '@justonce/core/transport';
import type { KafkaConsumerClient, KafkaProducerClient } from '../client/types';
import type { ResolvedConsumerOptions } from './options';
import { createBatchProcessor } from './batch/processor';
import type { BatchProcessor } from './types';
import { forwardToDeadLetterTopic } from './dead-letter';
import { KafkaStateError } from '../errors';

/**
 * What the start and stop of one Kafka consumer share: its resolved options, the clients
 * `start` opened, and the batch processor. Mutable on purpose: the lifecycle hooks fill it
 * in and empty it. @internal
 */
export interface ConsumerRuntime<R> {
  readonly options: ResolvedConsumerOptions<R>;
  /** The name used in `ConsumerStateError`s and logs. */
  readonly name: string;
  readonly processor: BatchProcessor;
  consumer: KafkaConsumerClient | undefined;
  producer: KafkaProducerClient | undefined;
  /** Counts group joins; a change means partitions may have been revoked. */
  generation: number;
  /** Set by `stop()`; a start under way gives up at its next step. */
  stopRequested: boolean;
  /** Unsubscribes the instrumentation listeners `start` added. */
  readonly unsubscribe: Array<() => void>;
}

/** The runtime of a consumer with these options; nothing is connected yet. @internal */
export function createConsumerRuntime<R>(options: ResolvedConsumerOptions<R>): ConsumerRuntime<R> {
  const runtime: ConsumerRuntime<R> = {
    options,
    name: `kafka consumer of group ${options.groupId}`,
    consumer: undefined,
    producer: undefined,
    generation: 0,
    stopRequested: false,
    unsubscribe: [],
    processor: createBatchProcessor<R>({
      inbox: options.inbox,
      handler: options.handler,
      mode: options.mode,
      batchSize: options.batchSize,
      envelope: {
        messageId: options.messageId,
        scopeHeader: options.scopeHeader,
        onExtractError: (error, topic, partition, offset) =>
          options.logger.warn('kafka message id extractor threw; the record has no id', {
            topic,
            partition,
            offset,
            error: errorMessage(error),
          }),
      },
      consumer: { seek: (position) => runtime.consumer?.seek(position) },
      heartbeatEveryMs: options.heartbeatEveryMs,
      generation: () => runtime.generation,
      forwardDeadLetter: (delivery, facts) => {
        const producer = runtime.producer;
        if (!producer) throw new KafkaStateError('the dead-letter producer is not connected');
        return forwardToDeadLetterTopic(producer, options.deadLetterTopic, delivery, facts);
      },
      onSettled: options.onSettled,
      logger: options.logger,
      messaging: { system: 'kafka', consumerGroup: options.groupId },
    }),
  };
  return runtime;
}
