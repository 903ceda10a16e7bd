import {
  connectGeneration,
  disconnectGeneration,
  inTurn,
  newGeneration,
  sendOn,
  sendWithDeadline,
  type ProducerRecord,
  type ProducerSlotOptions,
  type SlotRuntime,
} from './producer-slot';

export { producerStateError, rebuildDelayMs } from './producer-state';

/**
 * Holds the publisher's current producer and replaces it when its idempotence state broke.
 * Sends to one topic go one at a time ({@link inTurn}), each on the current, connected producer. A send that fails (with a
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
  const first = newGeneration(options.create, 1, 0);
  const slot: SlotRuntime = {
    options,
    current: first,
    live: new Set([first]),
    closed: false,
    warnedForeign: false,
    failedRebuilds: 0,
    turns: new Map(),
  };
  return {
    connect: () => connectGeneration(slot, slot.current),
    // The deadline starts when the send's turn comes, not while it waits behind others.
    send: (record) =>
      inTurn(slot, record.topic, () =>
        options.sendTimeoutMs === undefined
          ? sendOn(slot, record, { expired: false, started: undefined })
          : sendWithDeadline(slot, record, options.sendTimeoutMs),
      ),
    async close() {
      slot.closed = true;
      slot.current.retired = true;
      for (const g of slot.live) g.wake?.();
      await Promise.all([...slot.live].map((g) => disconnectGeneration(slot, g)));
    },
  };
}
