import type { Logger } from '@justonce/core';
import type { KafkaProducerClient } from '../client/types';
import { createProducerSlot } from './producer-recovery';

const quiet: Logger = {
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
};

/** A producer whose sends wait until the test settles them, in the order they started. */
function heldProducer(): KafkaProducerClient & { started: string[]; settle(ok: boolean): void } {
  const pending: Array<{ resolve: () => void; reject: (e: Error) => void }> = [];
  const started: string[] = [];
  return {
    started,
    connect: async () => undefined,
    disconnect: async () => undefined,
    send: (record) =>
      new Promise<unknown>((resolve, reject) => {
        started.push(`${record.topic}:${String(record.messages[0]?.key)}`);
        pending.push({ resolve: () => resolve([]), reject });
      }),
    settle(ok) {
      const next = pending.shift();
      if (ok) next?.resolve();
      else next?.reject(new Error('partly written'));
    },
  };
}

const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
const record = (topic: string, key: string) => ({ topic, messages: [{ key, value: null }] });

describe('the producer slot', () => {
  it('sends to one topic one at a time, and to other topics meanwhile', async () => {
    const producer = heldProducer();
    const slot = createProducerSlot({ create: () => producer, owns: false, logger: quiet });
    const sends = [
      slot.send(record('a', '1')),
      slot.send(record('a', '2')),
      slot.send(record('b', '1')),
    ];
    await tick();
    expect(producer.started).toEqual(['a:1', 'b:1']);
    producer.settle(true);
    await tick();
    expect(producer.started).toEqual(['a:1', 'b:1', 'a:2']);
    producer.settle(true);
    producer.settle(true);
    await Promise.all(sends);
  });

  it('starts the next send of a topic on a new producer once a send of it failed', async () => {
    const producers = [heldProducer(), heldProducer()];
    let built = 0;
    const slot = createProducerSlot({
      create: () => producers[built++]!,
      owns: true,
      logger: quiet,
    });
    const first = slot.send(record('a', '1'));
    const second = slot.send(record('a', '2'));
    await tick();
    producers[0]!.settle(false);
    await expect(first).rejects.toThrow('partly written');
    await tick();
    expect(producers[0]!.started).toEqual(['a:1']);
    expect(producers[1]!.started).toEqual(['a:2']);
    producers[1]!.settle(true);
    await second;
    await slot.close();
  });
});
