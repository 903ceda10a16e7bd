import type { Producer } from '@platformatic/kafka';
import type { KafkaProducerClient, KafkaProducerConfig, KafkaProducerRecord } from '../types';
import { KafkaStateError } from '../../errors';
import type { PlatformaticBase } from './client';
import { loadPlatformaticKafka } from './load';

/** Buffers as @platformatic/kafka takes them: it writes bytes as given. */
function bytes(value: Buffer | string | null | undefined): Buffer | undefined {
  if (value === null || value === undefined) return undefined;
  return typeof value === 'string' ? Buffer.from(value, 'utf8') : value;
}

/** One record in the library's shape; headers as byte pairs, in the order given. */
function toMessage(topic: string, record: KafkaProducerRecord) {
  const headers = new Map<Buffer, Buffer>();
  for (const [name, value] of Object.entries(record.headers ?? {})) {
    headers.set(Buffer.from(name, 'utf8'), bytes(value) ?? Buffer.alloc(0));
  }
  return { topic, key: bytes(record.key), value: bytes(record.value), headers };
}

/**
 * A {@link KafkaProducerClient} on @platformatic/kafka's `Producer`. Keys are hashed with
 * the murmur2 partitioner of the Java client and kafkajs (the library's
 * `compatibilityPartitioner`), so a key lands on the same partition whichever client sent
 * it. `connect` builds the producer and, when idempotent, obtains its producer id, so a
 * broker that cannot be reached fails the connect as with kafkajs. Errors are the library's
 * own (`NetworkError`, `TimeoutError`, `ProtocolError` with its `apiId`, …); the publisher
 * classifies them. @internal
 */
export function createPlatformaticProducer(
  base: PlatformaticBase,
  config: KafkaProducerConfig = {},
): KafkaProducerClient {
  let producer: Producer | undefined;
  const retry = config.retry ?? {};
  return {
    async connect() {
      const lib = await loadPlatformaticKafka();
      producer ??= new lib.Producer({
        clientId: base.clientId,
        bootstrapBrokers: base.bootstrapBrokers,
        connectTimeout: base.connectTimeout,
        timeout: base.timeout,
        requestTimeout: base.timeout,
        retries: retry.retries ?? 5,
        retryDelay: retry.initialRetryTime ?? 300,
        idempotent: config.idempotent ?? false,
        acks: lib.ProduceAcks.ALL,
        autocreateTopics: config.allowAutoTopicCreation ?? true,
        partitioner: lib.compatibilityPartitioner,
      });
      if (config.idempotent === true) await producer.initIdempotentProducer({});
      else await producer.metadata({ topics: [] });
    },
    async disconnect() {
      const closing = producer;
      producer = undefined;
      await closing?.close();
    },
    async send(record) {
      if (producer === undefined) {
        throw new KafkaStateError('the producer is not connected');
      }
      return producer.send({
        messages: record.messages.map((m) => toMessage(record.topic, m)),
        ...(record.acks === undefined ? {} : { acks: record.acks }),
      });
    },
  };
}
