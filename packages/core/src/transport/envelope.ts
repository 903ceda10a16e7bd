/**
 * Where a delivery sat in its broker, in the broker's own terms, so that a dead letter can be
 * traced back to it: a Kafka record's `topic`, `partition` and `offset`; an SQS message's
 * `queue` and `brokerMessageId`; a RabbitMQ delivery's `queue`, `exchange` and `routingKey`.
 * A transport sets the fields its broker has; the store keeps them with the dead letter
 * (`deadLetter.delivery.position`), and the dead-letter facts carry them
 * (`x-justonce-partition`, …; the topic or queue is `x-justonce-source`).
 */
export interface DeliveryPosition {
  /** Kafka topic. */
  readonly topic?: string;
  /** Kafka partition. */
  readonly partition?: number;
  /** Kafka offset, as a decimal string. */
  readonly offset?: string;
  /** SQS queue URL, or RabbitMQ queue. */
  readonly queue?: string;
  /** The id the broker gave the message (SQS `MessageId`); not the inbox's message id. */
  readonly brokerMessageId?: string;
  /** RabbitMQ exchange the message was published to (`''`: the default exchange). */
  readonly exchange?: string;
  /** RabbitMQ routing key the message was published with. */
  readonly routingKey?: string;
}

/**
 * What a transport knows about one delivery of a message. Every transport maps its own
 * delivery (a Kafka record, an SQS message, an AMQP delivery) to this shape; the inbox
 * needs nothing else.
 */
export interface DeliveryFacts {
  /** 1-based attempt number as the transport counts it, when it counts one. */
  readonly attempt?: number;
  /** SQS `ApproximateReceiveCount`, or RabbitMQ's `x-delivery-count`. */
  readonly receiveCount?: number;
  /** RabbitMQ's `redelivered` flag, or another hint that this is not the first delivery. */
  readonly redelivered?: boolean;
  /** Where the message came from: a topic, queue or exchange. */
  readonly source?: string;
  /** Kafka partition. */
  readonly partition?: number;
  /** Kafka offset, as a decimal string. */
  readonly offset?: string;
  /** When the transport received this delivery. */
  readonly receivedAt?: Date;
  /** Where the delivery sat in its broker; kept with a dead letter. */
  readonly position?: DeliveryPosition;
}

/** One message as the inbox sees it. */
export interface Envelope {
  /**
   * The message id the inbox dedupes on. `undefined` when the transport found none; the
   * inbox then reports a typed bad-input error and dead-letters the message.
   */
  readonly id: string | undefined;
  /** Tenant or other isolation scope; records of one scope never answer for another. */
  readonly scope?: string;
  /** Partition key (Kafka key, SQS message group, …), if any. */
  readonly key?: string;
  /** Headers as strings (`message-id`, `correlation-id`, `traceparent`, …). */
  readonly headers: Readonly<Record<string, string>>;
  /** The raw body exactly as delivered. */
  readonly body: Uint8Array | string;
  /** Facts about this delivery. */
  readonly delivery: DeliveryFacts;
}
