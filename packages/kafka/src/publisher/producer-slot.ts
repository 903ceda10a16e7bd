import { withTimeout, errorMessage } from '@justonce/core/transport';
import type { Logger } from '@justonce/core';
import type { KafkaProducerClient } from '../client/types';
import { KafkaStateError, KafkaTimeoutError } from '../errors';
import { producerStateError, rebuildDelayMs } from './producer-state';

// The slot's options and record live here, beside the functions that use them, and not in
// producer-recovery.ts, which builds on this module: importing them back would close a circle.

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

/** The errors {@link sendOn} throws for an acknowledgement it does not trust. */
const UNTRUSTED_ACKS = new WeakSet<object>();

/**
 * True for the error of a send acknowledged by a producer already replaced after a failed
 * or timed-out send (an outage, or a broken idempotence state): the records go again on the
 * new producer, and like the failure that replaced it this is no fault of theirs. @internal
 */
export function isUntrustedAck(error: unknown): boolean {
  return typeof error === 'object' && error !== null && UNTRUSTED_ACKS.has(error);
}

/** One send, as far as its deadline is concerned. @internal */
export interface SendTicket {
  /** The caller stopped waiting: a send still connecting must not go out. */
  expired: boolean;
  /** The producer the send went out on, once it did. */
  started: Generation | undefined;
}

/** One producer built by the slot, from creation until it is disconnected. @internal */
export interface Generation {
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

/** What the functions of one producer slot share. @internal */
export interface SlotRuntime {
  readonly options: ProducerSlotOptions;
  current: Generation;
  /** Generations that may hold connections: the current one and retired ones not yet closed. */
  readonly live: Set<Generation>;
  closed: boolean;
  warnedForeign: boolean;
  /** Rebuilds since the last successful send; drives {@link rebuildDelayMs}. */
  failedRebuilds: number;
  /** Per topic, settles when the last send to it queued by {@link inTurn} has settled. */
  readonly turns: Map<string, Promise<void>>;
}

/**
 * Runs `send` once every send to `topic` queued before it has settled: one send at a time per
 * topic. kafkajs rolls back the sequence numbers of every partition of a failed produce
 * request, those the broker wrote included, and only then lets its broker lock go (and
 * refreshes its metadata) before the failure reaches the slot. A send to the same partitions
 * started on the same producer in that window would reuse the numbers of records already
 * written, and the broker would acknowledge its batch as their duplicate without writing it:
 * a loss reported as success. Queued, the next send starts only after the failure retired
 * that producer. Sequence numbers are per partition, so sends to other topics go on. @internal
 */
export function inTurn(slot: SlotRuntime, topic: string, send: () => Promise<void>): Promise<void> {
  const result = (slot.turns.get(topic) ?? Promise.resolve()).then(send);
  const settled = result.then(
    () => undefined,
    () => undefined,
  );
  slot.turns.set(topic, settled);
  // The last send of a topic forgets the topic once it settled.
  void settled.then(() => {
    if (slot.turns.get(topic) === settled) slot.turns.delete(topic);
  });
  return result;
}

/** A new generation, built by the slot's `create`; nothing connects yet. @internal */
export function newGeneration(
  create: () => KafkaProducerClient,
  number: number,
  delayMs: number,
): Generation {
  return {
    number,
    producer: create(),
    connecting: undefined,
    inFlight: 0,
    retired: false,
    broken: false,
    disconnecting: undefined,
    delayMs,
    wake: undefined,
  };
}

/** Connects `g` once (after its backoff delay); a failed connect is tried again next time. @internal */
export function connectGeneration(slot: SlotRuntime, g: Generation): Promise<void> {
  if (!slot.options.owns) return Promise.resolve();
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
      if (slot.closed || g.retired) throw new KafkaStateError('the Kafka publisher is closed');
    }
    await g.producer.connect();
  })().catch((error: unknown) => {
    g.connecting = undefined;
    throw error;
  });
  return g.connecting;
}

/** Disconnects `g` once its connect settled, and forgets it. @internal */
export function disconnectGeneration(slot: SlotRuntime, g: Generation): Promise<void> {
  g.disconnecting ??= (async () => {
    try {
      if (!slot.options.owns || !g.connecting) return;
      await g.connecting.catch(() => undefined);
      await g.producer.disconnect();
    } finally {
      slot.live.delete(g);
    }
  })();
  return g.disconnecting;
}

/**
 * Retires the broken generation and makes a new one current (once per broken generation);
 * a producer the caller passed in is only reported, once. @internal
 */
export function rebuild(
  slot: SlotRuntime,
  broken: Generation,
  reason: string,
  cause: unknown,
  topic: string,
): void {
  // Another send on the same producer got here first; its rebuild serves this one too.
  if (broken !== slot.current || slot.closed) return;
  const { logger, owns, create } = slot.options;
  const error = errorMessage(cause);
  if (!owns) {
    if (!slot.warnedForeign) {
      slot.warnedForeign = true;
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
  slot.failedRebuilds += 1;
  const next = newGeneration(create, broken.number + 1, rebuildDelayMs(slot.failedRebuilds));
  slot.current = next;
  slot.live.add(next);
  const fields = { reason, topic, error, generation: next.number, delayMs: next.delayMs };
  const message = `kafka publisher rebuilt its idempotent producer after ${reason}; the failed batch is retried on the new producer`;
  // While the broker stays unreachable every send fails: the publisher's outage warning
  // says so once, and the rebuilds behind it are details.
  if (producerStateError(cause) !== undefined || slot.failedRebuilds === 1) {
    logger.warn(message, fields);
  } else {
    logger.debug(message, fields);
  }
  // Connect ahead; a failure here is reported by the next send, which connects again.
  connectGeneration(slot, next).catch(() => undefined);
}

/** A send on `g` settled: a retired generation is disconnected after its last one. */
function settleSend(slot: SlotRuntime, g: Generation): void {
  g.inFlight--;
  if (g.retired && g.inFlight === 0) {
    disconnectGeneration(slot, g).catch((error: unknown) =>
      slot.options.logger.warn('kafka publisher could not disconnect its replaced producer', {
        generation: g.number,
        error: errorMessage(error),
      }),
    );
  }
}

/**
 * The send itself. `ticket` learns the producer it went out on, and says when the caller
 * gave up on it while it was connecting: then it must not go out at all. @internal
 */
export async function sendOn(
  slot: SlotRuntime,
  record: ProducerRecord,
  ticket: SendTicket,
): Promise<void> {
  let g: Generation;
  for (;;) {
    if (slot.closed) throw new KafkaStateError('the Kafka publisher is closed');
    g = slot.current;
    await connectGeneration(slot, g);
    // Rebuilt or closed while connecting: start over on what is current now.
    if (g === slot.current && !slot.closed) break;
  }
  if (ticket.expired) return;
  // No await between the check above and this call: the send starts on a live producer.
  g.inFlight++;
  ticket.started = g;
  try {
    await g.producer.send(record);
    if (!g.broken && g === slot.current) slot.failedRebuilds = 0;
    // After kafkajs rolled back sequences the broker had accepted, a batch of the same size
    // is acknowledged as a duplicate without being written: trust no ack of a broken one.
    if (g.broken) {
      const untrusted = new KafkaStateError(
        'the producer was replaced after it lost its idempotence state; its acknowledgement is not trusted',
        { generation: g.number },
      );
      UNTRUSTED_ACKS.add(untrusted);
      throw untrusted;
    }
  } catch (error) {
    // Any failed send may have written part of its batch and left kafkajs's sequence
    // numbers behind the broker's, so that a later batch of the same size is acknowledged
    // as a duplicate without being written: only a fresh producer id is safe. A passed-in
    // producer is reported only for the errors that name its broken state.
    const reason = producerStateError(error);
    if (reason !== undefined || slot.options.owns) {
      rebuild(slot, g, reason ?? 'a failed send', error, record.topic);
    }
    throw error;
  } finally {
    settleSend(slot, g);
  }
}

/**
 * {@link sendOn} within `timeoutMs`: past it, rejects with a {@link KafkaTimeoutError} and
 * retires the producer the send went out on. @internal
 */
export function sendWithDeadline(
  slot: SlotRuntime,
  record: ProducerRecord,
  timeoutMs: number,
): Promise<void> {
  const ticket: SendTicket = { expired: false, started: undefined };
  return withTimeout(sendOn(slot, record, ticket), timeoutMs, () => {
    const error = new KafkaTimeoutError(
      `kafka did not answer a send to ${record.topic} within ${timeoutMs} ms`,
      { topic: record.topic, timeoutMs },
    );
    // The send goes on in kafkajs (its retries, its connection): that producer is
    // suspect like after any failed send, and the next send goes out on a new one.
    ticket.expired = true;
    const started = ticket.started;
    if (started !== undefined && slot.options.owns) {
      rebuild(slot, started, 'a send timed out', error, record.topic);
    }
    return error;
  });
}
