import {
  ConfigurationError,
  createInbox,
  fullJitterBackoff,
  hasErrorCode,
  isJustonceError,
  resolveMeter,
  silentLogger,
  type Inbox,
  type InboxOutcome,
} from '@justonce/core';
import type { ConsumeMessage, Options } from 'amqplib';
import { describe, openSession, resolveConnection, type AmqpSession } from '../amqp/connection';
import { encodableHeaders } from '../amqp/headers';
import { ConfirmedPublisher } from '../amqp/confirmed-publisher';
import { positiveInteger, validateName } from '../options';
import { OutageLog } from '../outage-log';
import { findMessageId, RETRY_ATTEMPT_HEADER, tenantHeaderScope, toEnvelope } from './envelope';
import type { RabbitConsumerEvent, SettleAction } from './events';
import { rejectUnknownConsumerOptions, type RabbitConsumerOptions } from './options';
import { retryDelays } from './retry-delays';
import {
  declareRetryQueue,
  declareTopology,
  type RabbitTopology,
  type TopologySettings,
} from './topology';
import { WorkQueue } from './work-queue';

/** A running (or runnable) RabbitMQ consumer with an inbox. */
export interface RabbitConsumer {
  /**
   * Connects, declares the topology, and starts consuming. Rejects when the first
   * connection or the topology fails (a {@link RabbitConnectionError} or
   * {@link RabbitTopologyError}); after that, lost connections are reopened automatically.
   * Calling it again while running resolves at once.
   */
  start(): Promise<void>;
  /**
   * Stops taking deliveries, returns the ones not started to the queue, waits for running
   * handlers (at most `shutdownTimeoutMs`), and closes the connection. Idempotent; a stopped
   * consumer cannot be started again.
   */
  stop(): Promise<void>;
  /** True while a channel is open and consuming. */
  readonly connected: boolean;
  /** The queues and exchanges this consumer uses. */
  topology(): RabbitTopology;
}

/** The headers a consumer adds to a message it dead-letters. */
export const DEAD_LETTER_HEADERS = {
  reason: 'x-justonce-reason',
  error: 'x-justonce-error',
  errorCode: 'x-justonce-error-code',
  deadLetterId: 'x-justonce-dead-letter-id',
  attempts: 'x-justonce-attempts',
  consumer: 'x-justonce-consumer',
  queue: 'x-justonce-queue',
  at: 'x-justonce-dead-lettered-at',
} as const;

/** The headers a consumer adds to a message it sends to a retry queue. */
export const RETRY_HEADERS = {
  attempt: RETRY_ATTEMPT_HEADER,
  delayMs: 'x-justonce-retry-delay-ms',
  lastError: 'x-justonce-last-error',
} as const;

/** Longest error text carried in a header. */
const MAX_ERROR_TEXT = 1_000;

/** Broker-set headers that must not be copied onto a republished message. */
const BROKER_HEADERS = /^(x-death|x-first-death-.*|x-last-death-.*|x-delivery-count)$/;

interface Live {
  readonly session: AmqpSession;
  readonly publisher: ConfirmedPublisher;
  readonly retryQueues: Map<number, Promise<string>>;
  /** Aborted when this channel is lost: its deliveries went stale (`ctx.signal`). */
  readonly abort: AbortController;
  consumerTag?: string;
}

interface Delivery {
  readonly live: Live;
  readonly message: ConsumeMessage;
}

type State = 'idle' | 'running' | 'stopping' | 'stopped';

/**
 * Consumes a RabbitMQ queue through the inbox: one effect per message id however often the
 * broker delivers it.
 *
 * Each delivery is acknowledged only after the inbox's transaction commits (processed) or
 * the inbox reports a duplicate. A failed attempt is copied to a retry queue with a
 * message TTL that dead-letters back into the queue (confirmed before the original is
 * acknowledged), so waiting never blocks the channel. A message the inbox dead-letters
 * (too many attempts, no id, undecodable body, …) is copied to the dead-letter exchange
 * with the reason in `x-justonce-*` headers, then acknowledged. A lost connection or
 * channel is reopened with full-jitter backoff; unacknowledged deliveries come back from
 * the broker and the inbox answers the ones already committed as duplicates.
 */
export function createRabbitConsumer<R = unknown>(
  options: RabbitConsumerOptions<R>,
): RabbitConsumer {
  rejectUnknownConsumerOptions(options as RabbitConsumerOptions<unknown>);
  const queueName = validateName(options.queue, 'queue');
  const connection = resolveConnection(options, 'createRabbitConsumer', `justonce:${queueName}`);
  if (typeof options.handler !== 'function') {
    throw new ConfigurationError('createRabbitConsumer: handler must be a function');
  }
  const handler = options.handler;
  const prefetch = positiveInteger(options.prefetch, 20, 'prefetch');
  const concurrency = positiveInteger(options.concurrency, 1, 'concurrency');
  if (concurrency > prefetch) {
    throw new ConfigurationError('concurrency cannot exceed prefetch', { concurrency, prefetch });
  }
  const confirmTimeoutMs = positiveInteger(options.confirmTimeoutMs, 15_000, 'confirmTimeoutMs');
  const shutdownTimeoutMs = positiveInteger(options.shutdownTimeoutMs, 30_000, 'shutdownTimeoutMs');
  const reconnectBaseMs = positiveInteger(options.reconnect?.baseMs, 100, 'reconnect.baseMs');
  const reconnectCapMs = positiveInteger(options.reconnect?.capMs, 10_000, 'reconnect.capMs');
  const storeRetry = {
    baseMs: positiveInteger(options.storeRetry?.baseMs, 200, 'storeRetry.baseMs'),
    capMs: positiveInteger(options.storeRetry?.capMs, 5_000, 'storeRetry.capMs'),
  };
  const retry = options.retry ?? {};
  const delays = retryDelays(retry);
  const topologySettings = topologyFrom(options, queueName);
  const extractor = options.messageIdExtractor;
  if (extractor !== undefined && typeof extractor !== 'function') {
    throw new ConfigurationError('messageIdExtractor must be a function');
  }
  const scopeExtractor = options.scopeExtractor ?? tenantHeaderScope;
  if (typeof scopeExtractor !== 'function') {
    throw new ConfigurationError('scopeExtractor must be a function');
  }
  const logger = options.logger ?? silentLogger;
  const inbox = inboxFrom(options, queueName);
  const meter = resolveMeter(options.meter);
  const deliveries = meter.createCounter('justonce.rabbitmq.deliveries', {
    description: 'Deliveries settled by the RabbitMQ consumer, by action',
  });
  const reconnects = meter.createCounter('justonce.rabbitmq.reconnects', {
    description: 'Connections or channels the RabbitMQ consumer lost and reopened',
  });

  let state: State = 'idle';
  let current: Live | undefined;
  let stopping: Promise<void> | undefined;
  const stopController = new AbortController();
  const declaredRetryQueues = new Set<string>();
  const work = new WorkQueue<Delivery>(concurrency, handle);
  const brokerOutage = new OutageLog(
    logger,
    {
      down: 'rabbitmq consumer lost its connection; reconnecting',
      up: 'rabbitmq consumer reconnected',
    },
    { queue: queueName },
  );
  const storeOutage = new OutageLog(
    logger,
    {
      down: 'rabbitmq consumer: the store is unavailable; holding deliveries unacknowledged and retrying',
      up: 'rabbitmq consumer: the store answers again',
    },
    { queue: queueName },
  );

  function emit(event: RabbitConsumerEvent): void {
    if (!options.onEvent) return;
    try {
      options.onEvent(event);
    } catch (error) {
      logger.warn('rabbitmq consumer onEvent threw', { error: describe(error) });
    }
  }

  function settled(
    d: Delivery,
    messageId: string | undefined,
    action: SettleAction,
    extra: { outcome?: InboxOutcome; delayMs?: number; error?: Error } = {},
  ): void {
    deliveries.add(1, { queue: queueName, action });
    emit({ type: 'settled', messageId, action, ...extra });
  }

  async function connectOnce(): Promise<Live> {
    const session = await openSession(connection);
    const live: Live = {
      session,
      publisher: new ConfirmedPublisher(session, confirmTimeoutMs),
      retryQueues: new Map(),
      abort: new AbortController(),
    };
    try {
      await session.bounded(
        'declaring the topology',
        declareTopology(session.channel, topologySettings),
      );
      await session.bounded('setting the prefetch', session.channel.prefetch(prefetch));
      current = live;
      const { consumerTag } = await session.bounded(
        `consuming queue "${queueName}"`,
        session.channel.consume(queueName, (message) => onMessage(live, message), {
          noAck: false,
        }),
      );
      live.consumerTag = consumerTag;
    } catch (error) {
      if (current === live) current = undefined;
      await session.close();
      throw error;
    }
    void session.whenLost.then((error) => onLost(live, error));
    return live;
  }

  function onMessage(live: Live, message: ConsumeMessage | null): void {
    if (message === null) {
      // The broker cancelled the consumer (the queue was deleted): reconnect and redeclare.
      logger.warn('rabbitmq consumer cancelled by the broker', { queue: queueName });
      void live.session.close();
      return;
    }
    work.push({ live, message });
  }

  function onLost(live: Live, error: Error): void {
    live.abort.abort(error);
    if (current === live) current = undefined;
    void live.session.close();
    // Deliveries not started yet belong to the dead channel; the broker requeues them.
    work.drop((d) => d.live === live);
    if (state !== 'running') return;
    brokerOutage.begin(error);
    reconnects.add(1, { queue: queueName });
    emit({ type: 'disconnected', error });
    void reconnectLoop();
  }

  async function reconnectLoop(): Promise<void> {
    for (let attempt = 1; state === 'running'; attempt++) {
      const delayMs = fullJitterBackoff(attempt, {
        baseMs: reconnectBaseMs,
        capMs: reconnectCapMs,
      });
      await sleep(delayMs, stopController.signal);
      if (state !== 'running') return;
      try {
        const live = await connectOnce();
        if (state !== 'running') {
          await live.session.close();
          return;
        }
        brokerOutage.end({ attempt });
        emit({ type: 'connected', reconnect: true });
        return;
      } catch (error) {
        const err = asError(error);
        const nextDelayMs = fullJitterBackoff(attempt + 1, {
          baseMs: reconnectBaseMs,
          capMs: reconnectCapMs,
        });
        // Warned once when the connection was lost; each failed attempt only at debug.
        logger.debug('rabbitmq consumer reconnection failed', {
          queue: queueName,
          attempt,
          error: err.message,
        });
        emit({ type: 'reconnect-failed', error: err, attempt, nextDelayMs });
      }
    }
  }

  async function handle(d: Delivery): Promise<void> {
    if (d.live.session.lost) return;
    const found = findMessageId(d.message, extractor);
    if (found.extractorError !== undefined) {
      logger.warn('messageIdExtractor threw; treating the message as having no id', {
        queue: queueName,
        error: describe(found.extractorError),
      });
    }
    const envelope = toEnvelope(d.message, queueName, found.id, scopeExtractor);
    let outcome: InboxOutcome<R> | undefined;
    try {
      outcome = await processHolding(d, envelope, found.id);
    } catch (error) {
      // The inbox reports handler errors and bad input as outcomes, and an unavailable store
      // as STORE_UNAVAILABLE (held above); any other throw is unexpected: retry later.
      const err = asError(error);
      logger.error('inbox failed; retrying the message later', {
        queue: queueName,
        messageId: found.id,
        error: err.message,
      });
      await retryLater(d, found.id, 1, delays.delayFor(1, 1_000), err, undefined);
      return;
    }
    if (outcome === undefined) return;
    switch (outcome.status) {
      case 'processed':
      case 'duplicate':
        if (ack(d, outcome.messageId, outcome)) settled(d, outcome.messageId, 'acked', { outcome });
        return;
      case 'failed':
        await retryLater(
          d,
          outcome.messageId,
          outcome.attempt,
          delays.delayFor(outcome.attempt, outcome.retryDelayMs),
          outcome.error,
          outcome,
        );
        return;
      case 'dead-lettered':
        await deadLetter(d, outcome);
        return;
    }
  }

  /**
   * Runs the inbox; while it throws STORE_UNAVAILABLE, holds the delivery unacknowledged and
   * runs it again after a capped jittered backoff. Neither nacked nor republished: each
   * return to the queue sets `redelivered` (and raises a quorum queue's delivery count),
   * which the inbox counts as an attempt, so a long outage would dead-letter good messages.
   * `undefined` when the wait ended first: the channel was lost (the broker redelivers) or
   * the consumer stops (the delivery is released to the queue).
   */
  async function processHolding(
    d: Delivery,
    envelope: ReturnType<typeof toEnvelope>,
    messageId: string | undefined,
  ): Promise<InboxOutcome<R> | undefined> {
    for (let attempt = 1; ; attempt++) {
      try {
        const outcome = await inbox.process(envelope, handler, { signal: d.live.abort.signal });
        storeOutage.end();
        return outcome;
      } catch (error) {
        if (!hasErrorCode(error, 'STORE_UNAVAILABLE')) throw error;
        storeOutage.begin(asError(error), { messageId });
        const delayMs = fullJitterBackoff(attempt, storeRetry);
        emit({ type: 'held', messageId, error: asError(error), attempt, nextDelayMs: delayMs });
        await sleep(delayMs, stopController.signal, d.live.abort.signal);
      }
      if (d.live.session.lost) return undefined;
      if (state !== 'running') {
        release(d, messageId);
        return undefined;
      }
    }
  }

  /** Returns a held delivery to the queue on shutdown, so another consumer can take it. */
  function release(d: Delivery, messageId: string | undefined): void {
    try {
      d.live.session.channel.nack(d.message, false, true);
      settled(d, messageId, 'released');
    } catch (error) {
      settled(d, messageId, 'abandoned', { error: asError(error) });
    }
  }

  /** Acknowledges on the delivery's own channel; false (and reported) when it is gone. */
  function ack(d: Delivery, messageId: string | undefined, outcome?: InboxOutcome): boolean {
    try {
      if (d.live.session.lost) throw new Error('the channel is closed');
      d.live.session.channel.ack(d.message);
      return true;
    } catch (error) {
      settled(d, messageId, 'abandoned', {
        error: asError(error),
        ...(outcome ? { outcome } : {}),
      });
      return false;
    }
  }

  function requeue(
    d: Delivery,
    messageId: string | undefined,
    error: Error,
    outcome: InboxOutcome | undefined,
  ): void {
    const extra = { error, ...(outcome ? { outcome } : {}) };
    try {
      if (d.live.session.lost) throw new Error('the channel is closed');
      d.live.session.channel.nack(d.message, false, true);
      settled(d, messageId, 'requeued', extra);
    } catch {
      settled(d, messageId, 'abandoned', extra);
    }
  }

  function retryQueue(live: Live, delayMs: number): Promise<string> {
    let declared = live.retryQueues.get(delayMs);
    if (!declared) {
      declared = live.session
        .bounded(
          `declaring the retry queue of ${delayMs} ms`,
          declareRetryQueue(live.session.channel, topologySettings, delayMs),
        )
        .then((name) => {
          declaredRetryQueues.add(name);
          return name;
        });
      declared.catch(() => live.retryQueues.delete(delayMs));
      live.retryQueues.set(delayMs, declared);
    }
    return declared;
  }

  async function retryLater(
    d: Delivery,
    messageId: string | undefined,
    attempt: number,
    delayMs: number,
    cause: Error,
    outcome: InboxOutcome | undefined,
  ): Promise<void> {
    try {
      const name = await retryQueue(d.live, delayMs);
      await d.live.publisher.writable();
      await d.live.publisher.publish(
        '',
        name,
        d.message.content,
        republished(d.message, {
          [RETRY_HEADERS.attempt]: attempt,
          [RETRY_HEADERS.delayMs]: delayMs,
          [RETRY_HEADERS.lastError]: truncate(cause.message),
        }),
      );
    } catch (error) {
      logger.warn('cannot schedule a retry; returning the message to the queue', {
        queue: queueName,
        messageId,
        error: describe(error),
      });
      requeue(d, messageId, asError(error), outcome);
      return;
    }
    if (ack(d, messageId, outcome)) {
      settled(d, messageId, 'retry-scheduled', {
        delayMs,
        error: cause,
        ...(outcome ? { outcome } : {}),
      });
    }
  }

  async function deadLetter(
    d: Delivery,
    outcome: Extract<InboxOutcome<R>, { status: 'dead-lettered' }>,
  ): Promise<void> {
    logger.warn('message dead-lettered', {
      queue: queueName,
      messageId: outcome.messageId,
      reason: outcome.reason,
      attempt: outcome.attempt,
      error: outcome.error.message,
    });
    try {
      await d.live.publisher.writable();
      await d.live.publisher.publish(
        topologySettings.deadLetterExchange,
        queueName,
        d.message.content,
        republished(d.message, {
          [DEAD_LETTER_HEADERS.reason]: outcome.reason,
          [DEAD_LETTER_HEADERS.error]: truncate(outcome.error.message),
          ...(isJustonceError(outcome.error)
            ? { [DEAD_LETTER_HEADERS.errorCode]: outcome.error.code }
            : {}),
          [DEAD_LETTER_HEADERS.deadLetterId]: outcome.deadLetterId,
          [DEAD_LETTER_HEADERS.attempts]: outcome.attempt,
          [DEAD_LETTER_HEADERS.consumer]: inbox.consumer,
          [DEAD_LETTER_HEADERS.queue]: queueName,
          [DEAD_LETTER_HEADERS.at]: new Date().toISOString(),
        }),
      );
    } catch (error) {
      // The store holds the dead letter; the broker copy failed (no binding, channel gone).
      // Try again later rather than acknowledge a message nobody received.
      logger.error('cannot publish to the dead-letter exchange', {
        queue: queueName,
        exchange: topologySettings.deadLetterExchange,
        messageId: outcome.messageId,
        error: describe(error),
      });
      await retryLater(
        d,
        outcome.messageId,
        outcome.attempt,
        delays.delayFor(outcome.attempt, 1_000),
        asError(error),
        outcome,
      );
      return;
    }
    if (ack(d, outcome.messageId, outcome)) {
      settled(d, outcome.messageId, 'dead-lettered', { outcome });
    }
  }

  return {
    async start() {
      if (state === 'running') return;
      if (state !== 'idle') {
        throw new ConfigurationError('a stopped consumer cannot be started again; create another');
      }
      state = 'running';
      try {
        await connectOnce();
      } catch (error) {
        state = 'idle';
        throw error;
      }
      logger.info('rabbitmq consumer started', { queue: queueName, prefetch, concurrency });
      emit({ type: 'connected', reconnect: false });
    },

    stop() {
      stopping ??= (async () => {
        state = 'stopping';
        stopController.abort();
        const live = current;
        if (live?.consumerTag !== undefined && !live.session.lost) {
          await live.session
            .bounded('cancelling the consumer', live.session.channel.cancel(live.consumerTag))
            .catch(() => undefined);
        }
        // Return what has not started yet, so another consumer can take it now.
        for (const d of work.drop(() => true)) {
          try {
            if (!d.live.session.lost) d.live.session.channel.nack(d.message, false, true);
          } catch {
            // The channel closed meanwhile; the broker requeues the message by itself.
          }
        }
        const timeout = new AbortController();
        const timedOut = await Promise.race([
          work.idle().then(() => false),
          sleep(shutdownTimeoutMs, timeout.signal).then(() => true),
        ]);
        timeout.abort();
        if (timedOut) {
          logger.warn('rabbitmq consumer stopped with handlers still running', {
            queue: queueName,
            running: work.active,
          });
        }
        current = undefined;
        if (live) await live.session.close();
        state = 'stopped';
        logger.info('rabbitmq consumer stopped', { queue: queueName });
      })();
      return stopping;
    },

    get connected() {
      return current !== undefined && !current.session.lost;
    },

    topology() {
      return {
        queue: queueName,
        deadLetterExchange: topologySettings.deadLetterExchange,
        deadLetterQueue: topologySettings.deadLetterQueue,
        retryQueues: [...declaredRetryQueues].sort(),
      };
    },
  };
}

function topologyFrom(options: RabbitConsumerOptions<unknown>, queue: string): TopologySettings {
  const deadLetterExchange = validateName(
    options.deadLetterExchange ?? `${queue}.dlx`,
    'deadLetterExchange',
  );
  const deadLetterQueue =
    options.deadLetterQueue === null
      ? null
      : validateName(options.deadLetterQueue ?? `${queue}.dead`, 'deadLetterQueue');
  const type = options.deadLetterExchangeType ?? 'direct';
  if (!['direct', 'topic', 'fanout', 'headers'].includes(type)) {
    throw new ConfigurationError('deadLetterExchangeType must be direct, topic, fanout or headers');
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
  // Retry queue names are derived from the queue name and must fit the 255-byte limit too.
  validateName(`${queue}.retry.${2 ** 31 - 1}ms`, 'queue (with its retry suffix)');
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

function inboxFrom(options: RabbitConsumerOptions<unknown>, queue: string): Inbox {
  if ((options.inbox === undefined) === (options.store === undefined)) {
    throw new ConfigurationError('createRabbitConsumer: give exactly one of inbox or store');
  }
  if (options.inbox !== undefined) {
    const clashes: string[] = (['consumer', 'decode'] as const).filter(
      (k) => options[k] !== undefined,
    );
    if (options.retry?.maxAttempts !== undefined) clashes.push('retry.maxAttempts');
    if (clashes.length > 0) {
      throw new ConfigurationError(
        `createRabbitConsumer: ${clashes.join(', ')} configure the inbox the consumer builds; set them on your inbox instead`,
      );
    }
    return options.inbox;
  }
  return createInbox({
    store: options.store!,
    consumer: options.consumer ?? queue,
    ...(options.retry?.maxAttempts !== undefined ? { maxAttempts: options.retry.maxAttempts } : {}),
    ...(options.decode !== undefined ? { decode: options.decode } : {}),
    ...(options.logger !== undefined ? { logger: options.logger } : {}),
    ...(options.meter !== undefined ? { meter: options.meter } : {}),
  });
}

/** Properties for a copy of `message` (retry or dead letter), with extra headers. */
function republished(
  message: ConsumeMessage,
  extraHeaders: Record<string, string | number>,
): Options.Publish {
  const p = message.properties;
  // Only what amqplib can encode again: a header it cannot would fail this publish on every
  // delivery, and the message would be requeued forever.
  const headers = encodableHeaders(p.headers);
  for (const name of Object.keys(headers)) {
    if (BROKER_HEADERS.test(name)) delete headers[name];
  }
  Object.assign(headers, extraHeaders);
  const out: Options.Publish = { headers, deliveryMode: p.deliveryMode ?? 2 };
  const copy = [
    'contentType',
    'contentEncoding',
    'priority',
    'correlationId',
    'replyTo',
    'messageId',
    'timestamp',
    'type',
    'appId',
  ] as const;
  for (const key of copy) {
    const value: unknown = p[key];
    if (value !== undefined && value !== null) (out as Record<string, unknown>)[key] = value;
  }
  return out;
}

function truncate(text: string): string {
  return text.length > MAX_ERROR_TEXT ? `${text.slice(0, MAX_ERROR_TEXT)}…` : text;
}

function asError(value: unknown): Error {
  return value instanceof Error ? value : new Error(String(value));
}

/** Waits `ms`, or less when one of `signals` aborts. */
function sleep(ms: number, ...signals: AbortSignal[]): Promise<void> {
  return new Promise((resolve) => {
    if (signals.some((signal) => signal.aborted)) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      for (const signal of signals) signal.removeEventListener('abort', done);
      resolve();
    }
    for (const signal of signals) signal.addEventListener('abort', done, { once: true });
  });
}
