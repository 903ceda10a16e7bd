/**
 * The consumer's queue and the names and topology derived from it: its retry queues, its
 * dead-letter exchange and queue. Checked here, apart from the other consumer options.
 */
import { ConfigurationError } from '@justonce/core';
import { MAX_DELAY_MS } from './retry-delays';
import { retryQueueName, type TopologySettings } from './declare';

/** AMQP short strings (queue and exchange names, routing keys) hold at most 255 bytes. */
const MAX_NAME_BYTES = 255;

/** Validates a queue or exchange name the consumer declares. */
function validateName(value: unknown, what: string): string {
  if (typeof value !== 'string' || value === '') {
    throw new ConfigurationError(`${what} must be a non-empty string`, { [what]: value });
  }
  if (Buffer.byteLength(value, 'utf8') > MAX_NAME_BYTES) {
    throw new ConfigurationError(`${what} must be at most ${MAX_NAME_BYTES} bytes`, {
      [what]: value,
    });
  }
  if (value.startsWith('amq.')) {
    throw new ConfigurationError(`${what} cannot start with "amq." (reserved by the broker)`, {
      [what]: value,
    });
  }
  return value;
}

/** Where dead letters go: an exchange, and optionally a queue the consumer binds to it. */
export interface RabbitDeadLetterOptions {
  /** Exchange dead letters are published to, routing key = the consumed queue. Default `<queue>.dlx`. */
  readonly exchange?: string;
  /** Type the dead-letter exchange is declared with. Default `direct`. */
  readonly exchangeType?: 'direct' | 'topic' | 'fanout' | 'headers';
  /**
   * Queue bound to the dead-letter exchange with the consumed queue's name as routing key.
   * Default `<queue>.dead`; `null` declares none (bind your own, or dead letters are
   * returned as unroutable and retried).
   */
  readonly queue?: string | null;
}

/** The consumer options the topology is made from. @internal */
export interface TopologyOptions {
  readonly deadLetter?: RabbitDeadLetterOptions | undefined;
  readonly declareTopology?: boolean | undefined;
  readonly durable?: boolean | undefined;
  readonly queueArguments?: Readonly<Record<string, unknown>> | undefined;
}

/** The longest suffix of a retry queue's name: the one of the longest delay. */
const LONGEST_RETRY_SUFFIX = retryQueueName('', MAX_DELAY_MS);

/**
 * The longest queue name taken, in bytes (236): its retry queues' names (the queue's name and
 * {@link LONGEST_RETRY_SUFFIX}) must fit AMQP's 255, and so do its `.dlx` and `.dead` ones.
 */
const MAX_QUEUE_BYTES = MAX_NAME_BYTES - LONGEST_RETRY_SUFFIX.length;

/**
 * `queue`, checked before the names derived from it so that its own limit is the one named.
 * @internal
 */
export function queueFrom(value: unknown): string {
  if (typeof value === 'string' && Buffer.byteLength(value, 'utf8') > MAX_QUEUE_BYTES) {
    throw new ConfigurationError(
      `queue must be at most ${MAX_QUEUE_BYTES} bytes: its retry queues add ` +
        `\`${LONGEST_RETRY_SUFFIX}\` within AMQP's ${MAX_NAME_BYTES}`,
      { queue: value, bytes: Buffer.byteLength(value, 'utf8') },
    );
  }
  return validateName(value, 'queue');
}

/** The topology of `queue` from the consumer's options, checked. @internal */
export function topologyFrom(options: TopologyOptions, queue: string): TopologySettings {
  const deadLetter = options.deadLetter ?? {};
  const deadLetterExchange = validateName(
    deadLetter.exchange ?? `${queue}.dlx`,
    'deadLetter.exchange',
  );
  const deadLetterQueue =
    deadLetter.queue === null
      ? null
      : validateName(deadLetter.queue ?? `${queue}.dead`, 'deadLetter.queue');
  const type = deadLetter.exchangeType ?? 'direct';
  if (!['direct', 'topic', 'fanout', 'headers'].includes(type)) {
    throw new ConfigurationError(
      'deadLetter.exchangeType must be direct, topic, fanout or headers',
    );
  }
  const declare = options.declareTopology ?? true;
  const durable = options.durable ?? true;
  if (typeof declare !== 'boolean' || typeof durable !== 'boolean') {
    throw new ConfigurationError('declareTopology and durable must be booleans');
  }
  const queueArguments = options.queueArguments ?? {};
  if (typeof queueArguments !== 'object' || queueArguments === null) {
    throw new ConfigurationError('queueArguments must be an object');
  }
  return {
    queue,
    declare,
    durable,
    queueArguments,
    deadLetterExchange,
    deadLetterExchangeType: type,
    deadLetterQueue,
  };
}
