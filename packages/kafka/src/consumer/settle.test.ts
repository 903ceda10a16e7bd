import { JustonceError, silentLogger, type Inbox, type InboxOutcome } from '@justonce/core';
import type { DeadLetterFacts, Envelope, SettledEvent } from '@justonce/core/transport';
import { createBatchProcessor } from './batch/processor';
import type { KafkaBatchContext, KafkaRecord } from '../client/types';
import type { KafkaDelivery, ProcessorDeps } from './types';

/** What the consumer reports to `onSettled`, through core's `decide` / `decideOnThrow`. */

const recordAt = (offset: number): KafkaRecord => ({
  key: null,
  value: Buffer.from(`v-${offset}`),
  offset: String(offset),
  timestamp: '0',
  headers: { 'message-id': `m-${offset}` },
});

const base = (id: string) => ({ messageId: id, scope: 'default' });

/** The outcome the fake inbox gives each record, by offset. */
function outcomeOf(envelope: Envelope, script: Record<string, string>): InboxOutcome<number> {
  const id = envelope.id!;
  switch (script[envelope.delivery.offset!] ?? 'processed') {
    case 'duplicate':
      return { status: 'duplicate', ...base(id) };
    case 'failed':
      return {
        status: 'failed',
        ...base(id),
        attempt: 1,
        retriable: true,
        error: new Error('handler broke'),
        retryDelayMs: 750,
      };
    case 'dead-lettered':
      return {
        status: 'dead-lettered',
        ...base(id),
        attempt: 3,
        reason: 'MAX_ATTEMPTS',
        error: new Error('gave up'),
        deadLetterId: '42',
      };
    default:
      return { status: 'processed', ...base(id), attempt: 1, result: 1 };
  }
}

interface Harness {
  readonly events: Array<SettledEvent<number, KafkaDelivery>>;
  readonly log: string[];
  readonly letters: DeadLetterFacts[];
  readonly processor: ReturnType<typeof createBatchProcessor<number>>;
  context(offsets: number[], commitFails?: boolean): KafkaBatchContext;
}

/** A fake inbox: the two calls the processor makes. */
interface FakeInbox {
  process(envelope: Envelope): Promise<InboxOutcome<number>>;
  processBatch(envelopes: readonly Envelope[]): Promise<Array<InboxOutcome<number>>>;
}

function harness(
  mode: 'batch' | 'message',
  inbox: FakeInbox,
  over: Partial<ProcessorDeps<number>> = {},
): Harness {
  const events: Array<SettledEvent<number, KafkaDelivery>> = [];
  const log: string[] = [];
  const letters: DeadLetterFacts[] = [];
  const processor = createBatchProcessor<number>({
    inbox: { consumer: 'billing', ...inbox } as unknown as Inbox,
    handler: async () => 1,
    mode,
    batchSize: 10,
    envelope: {
      messageId: { header: 'message-id', fallback: true, extract: undefined },
      scopeHeader: 'tenant',
      onExtractError: () => undefined,
    },
    consumer: { seek: ({ offset }) => log.push(`seek ${offset}`) },
    heartbeatEveryMs: 60_000,
    generation: () => 0,
    forwardDeadLetter: async (_delivery, facts) => {
      letters.push(facts);
      return 'orders.dlq';
    },
    onSettled: (event) => {
      events.push(event);
      log.push(`${event.action} ${event.message.record.offset}`);
    },
    logger: silentLogger,
    ...over,
  });
  const context = (offsets: number[], commitFails = false): KafkaBatchContext => ({
    batch: { topic: 'orders', partition: 2, highWatermark: '0', messages: offsets.map(recordAt) },
    resolveOffset: () => undefined,
    heartbeat: async () => undefined,
    pause: () => () => undefined,
    commitOffsetsIfNecessary: async (offsets) => {
      const offset = offsets!.topics[0]!.partitions[0]!.offset;
      log.push(`commit ${offset}`);
      if (commitFails) throw new Error('commit refused');
    },
    isRunning: () => true,
    isStale: () => false,
  });
  return { events, log, letters, processor, context };
}

const scripted = (script: Record<string, string>) => ({
  process: async (e: Envelope) => outcomeOf(e, script),
  processBatch: async (es: readonly Envelope[]) => es.map((e) => outcomeOf(e, script)),
});

describe.each(['batch', 'message'] as const)('onSettled in %s mode', (mode) => {
  it('acks after the offset commit, forwards dead letters with core facts, redelivers failures', async () => {
    const h = harness(mode, scripted({ '1': 'duplicate', '2': 'dead-lettered', '3': 'failed' }));
    await h.processor.eachBatch(h.context([0, 1, 2, 3]));
    h.processor.dispose();
    expect(h.log).toEqual([
      'commit 3',
      'acked 0',
      'acked 1',
      'dead-lettered 2',
      'redelivered 3',
      'seek 3',
    ]);
    const [acked, , deadLettered, redelivered] = h.events;
    expect(acked).toMatchObject({
      action: 'acked',
      messageId: 'm-0',
      outcome: { status: 'processed' },
      message: { topic: 'orders', partition: 2, record: { offset: '0' } },
    });
    expect(deadLettered?.deadLetter).toMatchObject({
      reason: 'MAX_ATTEMPTS',
      attempts: 3,
      consumer: 'billing',
      source: 'orders',
      deadLetterId: '42',
    });
    expect(h.letters).toEqual([deadLettered?.deadLetter]);
    expect(redelivered).toMatchObject({ action: 'redelivered', delayMs: 750 });
  });

  it('reports records whose offset commit failed as abandoned', async () => {
    const h = harness(mode, scripted({}));
    await expect(h.processor.eachBatch(h.context([0, 1], true))).rejects.toThrow('commit refused');
    h.processor.dispose();
    expect(h.events.map((e) => [e.action, e.error?.message])).toEqual([
      ['abandoned', 'commit refused'],
      ['abandoned', 'commit refused'],
    ]);
  });

  it('holds on a store outage (no outcome, nothing charged) and releases on any other throw', async () => {
    const outage = new JustonceError('STORE_UNAVAILABLE', 'the store is unavailable');
    const throwing = (error: unknown) => ({
      process: async () => Promise.reject(error),
      processBatch: async () => Promise.reject(error),
    });
    const held = harness(mode, throwing(outage));
    await held.processor.eachBatch(held.context([5]));
    held.processor.dispose();
    expect(held.events).toHaveLength(1);
    expect(held.events[0]).toMatchObject({ action: 'held', messageId: 'm-5', error: outage });
    expect(held.events[0]?.outcome).toBeUndefined();
    expect(held.events[0]?.delayMs).toBeGreaterThanOrEqual(100);
    expect(held.log).toContain('seek 5');

    const released = harness(mode, throwing(new TypeError('a bug')));
    await released.processor.eachBatch(released.context([5]));
    released.processor.dispose();
    expect(released.events[0]).toMatchObject({ action: 'released', messageId: 'm-5' });
    expect(released.events[0]?.error?.message).toBe('a bug');
  });

  it('halted (stop without drain): commits nothing and releases what was in flight', async () => {
    let halt: () => void = () => undefined;
    const h = harness(mode, {
      process: async (e: Envelope) => {
        halt();
        return outcomeOf(e, {});
      },
      processBatch: async (es: readonly Envelope[]) => {
        halt();
        return es.map((e) => outcomeOf(e, {}));
      },
    });
    halt = () => h.processor.halt('stopped without draining');
    await h.processor.eachBatch(h.context([0, 1, 2]));
    h.processor.dispose();
    expect(h.log.filter((l) => l.startsWith('commit') || l.startsWith('seek'))).toEqual([]);
    expect(h.events.length).toBeGreaterThan(0);
    for (const event of h.events) {
      expect(event).toMatchObject({
        action: 'released',
        error: { message: 'stopped without draining' },
      });
    }
  });
});

it('batch mode: records after a failed one in its chunk are released with it', async () => {
  const h = harness('batch', scripted({ '1': 'failed' }));
  await h.processor.eachBatch(h.context([0, 1, 2]));
  h.processor.dispose();
  expect(h.log).toEqual(['commit 1', 'acked 0', 'redelivered 1', 'released 2', 'seek 1']);
});
