import { errorChain, type Logger } from '@justonce/core';
import type { KafkaProducerClient } from './client';
import { KafkaStateError, KafkaTimeoutError } from './errors';

/**
 * Broker errors that mean the producer's idempotence state (producer id, epoch, per-partition
 * sequence numbers) no longer matches the broker's. kafkajs neither fixes nor forgets it: it
 * rolls its sequence numbers back after a failed request, so every later send is refused the
 * same way. Only a new producer (new id, sequences from zero) gets out of it.
 */
const PRODUCER_STATE_ERRORS: ReadonlyMap<number, string> = new Map([
  [45, 'OUT_OF_ORDER_SEQUENCE_NUMBER'],
  [46, 'DUPLICATE_SEQUENCE_NUMBER'],
  [47, 'INVALID_PRODUCER_EPOCH'],
  [49, 'INVALID_PRODUCER_ID_MAPPING'],
  [59, 'UNKNOWN_PRODUCER_ID'],
  [90, 'PRODUCER_FENCED'],
]);
const PRODUCER_STATE_TYPES = new Set(PRODUCER_STATE_ERRORS.values());

/**
 * The broker error type, anywhere in the cause chain of `error`, that calls for a new
 * producer (see {@link PRODUCER_STATE_ERRORS}), or `undefined`. Follows `cause` (kafkajs's
 * `KafkaJSNumberOfRetriesExceeded` and `KafkaJSNonRetriableError` wrap the protocol error
 * there), `originalError` and the `errors` of aggregate errors. Matches kafkajs's `type`, or
 * the numeric broker `code` other KafkaJS-compatible clients report; kafkajs 2.2 has no name
 * for code 90 and reports it as `KAFKAJS_UNKNOWN_ERROR_CODE` "Unknown error code 90".
 */
export function producerStateError(error: unknown): string | undefined {
  for (const e of errorChain(error)) {
    if (typeof e.type === 'string' && PRODUCER_STATE_TYPES.has(e.type)) return e.type;
    if (typeof e.code === 'number' && PRODUCER_STATE_ERRORS.has(e.code)) {
      return PRODUCER_STATE_ERRORS.get(e.code);
    }
    if (
      e.type === 'KAFKAJS_UNKNOWN_ERROR_CODE' &&
      typeof e.message === 'string' &&
      /\bcode 90$/.test(e.message)
    ) {
      return 'PRODUCER_FENCED';
    }
  }
  return undefined;
}

/** One send, as far as its deadline is concerned. */
interface SendTicket {
  /** The caller stopped waiting: a send still connecting must not go out. */
  expired: boolean;
  /** The producer the send went out on, once it did. */
  started: Generation | undefined;
}

/** One producer built by the slot, from creation until it is disconnected. */
interface Generation {
  /** 1 for the first producer, one more per rebuild. */
  readonly number: number;
  readonly producer: KafkaProducerClient;
  connecting: Promise<void> | undefined;
  /** Sends started on this producer and not settled yet. */
  inFlight: number;
  /** Replaced (or the slot closed): disconnect once `inFlight` reaches 0. */
  retired: boolean;
  /** Replaced because its idempotence state broke: its later acknowledgements are suspect. */
  broken: boolean;
  disconnecting: Promise<void> | undefined;
  /** Milliseconds to wait before connecting: the backoff after consecutive failed sends. */
  delayMs: number;
  /** Ends the wait early (the slot closed or the producer was replaced). */
  wake: (() => void) | undefined;
}

/**
 * Backoff before a rebuilt producer connects, from the second rebuild in a row without a
 * successful send: the first rebuild (a broken idempotence state) recovers at once, while a
 * broker that stays unreachable is not met with a new producer per relay cycle.
 */
const REBUILD_BACKOFF = { baseMs: 500, capMs: 5_000 };

/** The delay before the `n`th consecutive rebuild connects: 0, then 0.5–1, 1–2, … up to 2.5–5 s. */
export function rebuildDelayMs(n: number, random: () => number = Math.random): number {
  if (n <= 1) return 0;
  const ceiling = Math.min(REBUILD_BACKOFF.capMs, REBUILD_BACKOFF.baseMs * 2 ** (n - 2));
  // Half fixed, half jitter: never 0, so a run of failures really slows down.
  return Math.floor(ceiling / 2 + (ceiling / 2) * random());
}

/** What {@link createProducerSlot} needs. */
export interface ProducerSlotOptions {
  /** Builds a producer: once at creation, once more per rebuild (only when `owns`). */
  readonly create: () => KafkaProducerClient;
  /**
   * Whether the slot connects, rebuilds and disconnects its producers. When false, the one
   * producer `create` returns belongs to the caller and is never replaced.
   */
  readonly owns: boolean;
  /** Where rebuilds and failed disconnects are reported. */
  readonly logger: Logger;
  /**
   * Milliseconds one `send` may take, connecting included, before it rejects with a
   * {@link KafkaTimeoutError}; the producer it ran on is then replaced like after any failed
   * send. Default: no limit beyond the client's own.
   */
  readonly sendTimeoutMs?: number;
}

/** The record {@link ProducerSlot.send} passes to the producer. */
export type ProducerRecord = Parameters<KafkaProducerClient['send']>[0];

/**
 * Holds the publisher's current producer and replaces it when its idempotence state broke.
 * Sends always start on the current, connected producer. A send that fails (with a
 * producer-state error, see {@link producerStateError}, or any other: a partly written batch
 * leaves the same trap) retires the producer it ran on and builds the next one, unless that
 * producer was already replaced: concurrent failures of one producer rebuild it once. A retired producer is disconnected once its last send
 * settles, so no send runs on a disconnected producer (kafkajs would reconnect it). A send
 * that still succeeds on a producer retired as broken is reported failed: kafkajs rolls its
 * sequence numbers back over batches the broker accepted, and the broker then acknowledges a
 * later batch of the same size as a duplicate without writing it.
 */
export interface ProducerSlot {
  /** Connects the current producer (no-op when the slot does not own it). */
  connect(): Promise<void>;
  /**
   * Sends on the current producer; rejects with the producer's error after any rebuild, or
   * with a {@link KafkaTimeoutError} after `sendTimeoutMs`.
   */
  send(record: ProducerRecord): Promise<void>;
  /** Stops sending and disconnects every producer the slot still has connected. */
  close(): Promise<void>;
}

/** Creates a {@link ProducerSlot}; nothing connects until `connect` or the first `send`. */
export function createProducerSlot(options: ProducerSlotOptions): ProducerSlot {
  const { create, owns, logger, sendTimeoutMs } = options;
  const generationOf = (number: number, delayMs: number): Generation => ({
    number,
    producer: create(),
    connecting: undefined,
    inFlight: 0,
    retired: false,
    broken: false,
    disconnecting: undefined,
    delayMs,
    wake: undefined,
  });
  let current = generationOf(1, 0);
  /** Generations that may hold connections: the current one and retired ones not yet closed. */
  const live = new Set<Generation>([current]);
  let closed = false;
  let warnedForeign = false;
  /** Rebuilds since the last successful send; drives {@link rebuildDelayMs}. */
  let failedRebuilds = 0;

  const connect = (g: Generation): Promise<void> => {
    if (!owns) return Promise.resolve();
    g.connecting ??= (async () => {
      if (g.delayMs > 0) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, g.delayMs);
          g.wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        g.wake = undefined;
        g.delayMs = 0;
        if (closed || g.retired) throw new KafkaStateError('the Kafka publisher is closed');
      }
      await g.producer.connect();
    })().catch((error: unknown) => {
      g.connecting = undefined;
      throw error;
    });
    return g.connecting;
  };

  const disconnect = (g: Generation): Promise<void> => {
    g.disconnecting ??= (async () => {
      try {
        if (!owns || !g.connecting) return;
        await g.connecting.catch(() => undefined);
        await g.producer.disconnect();
      } finally {
        live.delete(g);
      }
    })();
    return g.disconnecting;
  };

  const rebuild = (broken: Generation, reason: string, cause: unknown, topic: string): void => {
    // Another send on the same producer got here first; its rebuild serves this one too.
    if (broken !== current || closed) return;
    const error = cause instanceof Error ? cause.message : String(cause);
    if (!owns) {
      if (!warnedForeign) {
        warnedForeign = true;
        logger.warn(
          'kafka producer lost its idempotence state; the producer was passed in, so the publisher cannot rebuild it: replace it',
          { reason, topic, error },
        );
      }
      return;
    }
    broken.retired = true;
    broken.broken = true;
    broken.wake?.();
    failedRebuilds += 1;
    current = generationOf(broken.number + 1, rebuildDelayMs(failedRebuilds));
    live.add(current);
    const fields = { reason, topic, error, generation: current.number, delayMs: current.delayMs };
    const message = `kafka publisher rebuilt its idempotent producer after ${reason}; the failed batch is retried on the new producer`;
    // While the broker stays unreachable every send fails: the publisher's outage warning
    // says so once, and the rebuilds behind it are details.
    if (producerStateError(cause) !== undefined || failedRebuilds === 1)
      logger.warn(message, fields);
    else logger.debug(message, fields);
    // Connect ahead; a failure here is reported by the next send, which connects again.
    connect(current).catch(() => undefined);
  };

  const settle = (g: Generation): void => {
    g.inFlight--;
    if (g.retired && g.inFlight === 0) {
      disconnect(g).catch((error: unknown) =>
        logger.warn('kafka publisher could not disconnect its replaced producer', {
          generation: g.number,
          error: error instanceof Error ? error.message : String(error),
        }),
      );
    }
  };

  /**
   * The send itself. `ticket` learns the producer it went out on, and says when the caller
   * gave up on it while it was connecting: then it must not go out at all.
   */
  async function sendOn(record: ProducerRecord, ticket: SendTicket): Promise<void> {
    let g: Generation;
    for (;;) {
      if (closed) throw new KafkaStateError('the Kafka publisher is closed');
      g = current;
      await connect(g);
      // Rebuilt or closed while connecting: start over on what is current now.
      if (g === current && !closed) break;
    }
    if (ticket.expired) return;
    // No await between the check above and this call: the send starts on a live producer.
    g.inFlight++;
    ticket.started = g;
    try {
      await g.producer.send(record);
      if (!g.broken && g === current) failedRebuilds = 0;
      // After kafkajs rolled back sequences the broker had accepted, a batch of the same size
      // is acknowledged as a duplicate without being written: trust no ack of a broken one.
      if (g.broken) {
        throw new KafkaStateError(
          'the producer was replaced after it lost its idempotence state; its acknowledgement is not trusted',
          { generation: g.number },
        );
      }
    } catch (error) {
      // Any failed send may have written part of its batch and left kafkajs's sequence
      // numbers behind the broker's, so that a later batch of the same size is acknowledged
      // as a duplicate without being written: only a fresh producer id is safe. A passed-in
      // producer is reported only for the errors that name its broken state.
      const reason = producerStateError(error);
      if (reason !== undefined || owns) {
        rebuild(g, reason ?? 'a failed send', error, record.topic);
      }
      throw error;
    } finally {
      settle(g);
    }
  }

  return {
    connect: () => connect(current),
    send(record) {
      const ticket: SendTicket = { expired: false, started: undefined };
      if (sendTimeoutMs === undefined) return sendOn(record, ticket);
      let timer: ReturnType<typeof setTimeout> | undefined;
      const expired = new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          const error = new KafkaTimeoutError(
            `kafka did not answer a send to ${record.topic} within ${sendTimeoutMs} ms`,
            { topic: record.topic, timeoutMs: sendTimeoutMs },
          );
          // The send goes on in kafkajs (its retries, its connection): that producer is
          // suspect like after any failed send, and the next send goes out on a new one.
          ticket.expired = true;
          const started = ticket.started;
          if (started !== undefined && owns) {
            rebuild(started, 'a send timed out', error, record.topic);
          }
          reject(error);
        }, sendTimeoutMs);
      });
      const sending = sendOn(record, ticket);
      // Settled after the deadline: nobody awaits it any more.
      sending.catch(() => undefined);
      return Promise.race([sending, expired]).finally(() => clearTimeout(timer));
    },
    async close() {
      closed = true;
      current.retired = true;
      for (const g of live) g.wake?.();
      await Promise.all([...live].map(disconnect));
    },
  };
}
