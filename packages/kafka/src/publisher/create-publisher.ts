import type { Publisher } from '@justonce/core/transport';
import { buildKafkaClient } from '../client/built-client';
import { KafkaStateError } from '../errors';
import { validatePublisherOptions, type KafkaPublisherOptions } from './options';
import { createProducerSlot } from './producer-recovery';
import { createOutageNotes, publishByTopic, type SendDeps } from './publish';

/** The relay's Kafka publisher: a core {@link Publisher} that can also connect ahead of time. */
export interface KafkaPublisher extends Publisher {
  /**
   * Connects the producer now (the first `publish` otherwise does it). Resolves once the
   * producer is ready; a no-op for a producer you passed in.
   */
  connect(): Promise<void>;
}

/**
 * The relay's Kafka publisher: an idempotent producer that waits for acknowledgement from
 * all in-sync replicas (`acks=-1`). The record key is the outbox partition key, so the
 * outbox's per-key order becomes per-partition order in Kafka; headers carry `message-id`
 * and whatever the outbox recorded (`causation-id`, `correlation-id`, `traceparent`,
 * `tracestate`, `tenant`, …).
 *
 * Messages are sent one request per destination topic, topics in parallel. Results are
 * per message, in input order; when a topic's request fails, every message of that topic
 * in the call is reported failed (some may have been written: the relay publishes them
 * again with the same message id, which downstream inboxes drop as duplicates).
 *
 * When the broker refuses the producer's idempotence state (`OUT_OF_ORDER_SEQUENCE_NUMBER`,
 * `UNKNOWN_PRODUCER_ID`, `INVALID_PRODUCER_EPOCH`, … — e.g. after a topic was re-created or a
 * broker lost part of its log), the publisher replaces its producer with a new one (new
 * producer id, sequences from zero), logs a warning and reports the batch as retriable. A
 * producer passed as `producer` cannot be replaced; the publisher only warns.
 */
export function createKafkaPublisher(options: KafkaPublisherOptions): KafkaPublisher {
  // `?.`: options that are not an object are refused by `validatePublisherOptions`, not met with a TypeError.
  const { retries, timeout, sendTimeoutMs, logger } = validatePublisherOptions(options);
  const owns = options.producer === undefined;
  const kafka =
    options.kafka ??
    (owns
      ? buildKafkaClient(options.client, {
          brokers: options.brokers ?? [],
          clientId: options.clientId ?? 'justonce-relay',
          timeouts: options.timeouts,
          logger: options.logger,
        })
      : undefined);
  const given = options.producer;
  const slot = createProducerSlot({
    owns,
    logger,
    sendTimeoutMs,
    create: () =>
      given ?? kafka!.producer({ idempotent: true, maxInFlightRequests: 1, retry: { retries } }),
  });
  let closing: Promise<void> | undefined;
  const send: SendDeps = { slot, timeout, outage: createOutageNotes(logger) };

  return {
    messagingSystem: 'kafka',
    connect: () => {
      if (closing) return Promise.reject(new KafkaStateError('the Kafka publisher is closed'));
      return slot.connect();
    },
    async publish(messages) {
      if (closing) throw new KafkaStateError('the Kafka publisher is closed');
      if (messages.length === 0) return [];
      return publishByTopic(send, messages);
    },
    close() {
      closing ??= slot.close();
      return closing;
    },
  };
}
