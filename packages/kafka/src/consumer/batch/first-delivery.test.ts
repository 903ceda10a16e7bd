import { silentLogger, type Inbox, type InboxOutcome } from '@justonce/core';
import type { Envelope } from '@justonce/core/transport';
import { createBatchProcessor } from './processor';
import type { KafkaBatchContext, KafkaRecord } from '../../client/types';
import {
  JUST_ASSIGNED,
  afterCommit,
  createFirstDeliveryTracker,
  declareFirstDeliveries,
  type PartitionDeliveries,
} from './first-delivery';

const offsets = (from: number, to: number): bigint[] =>
  Array.from({ length: to - from + 1 }, (_, i) => BigInt(from + i));

describe('declareFirstDeliveries', () => {
  it('declares nothing in the first chunk after an assignment', () => {
    const { firsts, state } = declareFirstDeliveries(JUST_ASSIGNED, offsets(0, 9), 10);
    expect(firsts.every((f) => !f)).toBe(true);
    expect(state).toEqual({ committed: false, frontier: 9n, handed: 10 });
  });

  it('declares records above the frontier once a commit succeeded', () => {
    let state = declareFirstDeliveries(JUST_ASSIGNED, offsets(0, 9), 10).state;
    // Handed but not yet committed: still nothing is declared.
    expect(declareFirstDeliveries(state, offsets(10, 12), 10).firsts).toEqual([
      false,
      false,
      false,
    ]);
    state = afterCommit(state, true);
    const next = declareFirstDeliveries(state, offsets(10, 19), 10);
    expect(next.firsts.every((f) => f)).toBe(true);
    expect(next.state.frontier).toBe(19n);
  });

  it('counts the first `countFirst` records of an assignment even when the first chunk is short', () => {
    let state = declareFirstDeliveries(JUST_ASSIGNED, offsets(100, 103), 10).state;
    state = afterCommit(state, true);
    const { firsts } = declareFirstDeliveries(state, offsets(104, 111), 10);
    // 4 + 6 = the first 10 records are counted; the two after them are declared.
    expect(firsts).toEqual([false, false, false, false, false, false, true, true]);
  });

  it('does not declare a retry at or below the frontier, only what lies above it', () => {
    let state = declareFirstDeliveries(JUST_ASSIGNED, offsets(0, 9), 10).state;
    state = afterCommit(state, true);
    state = declareFirstDeliveries(state, offsets(10, 19), 10).state;
    // Offset 14 failed; 10–13 committed; the consumer seeks back to 14 and refetches.
    state = afterCommit(state, true);
    const retry = declareFirstDeliveries(state, offsets(14, 23), 10);
    expect(retry.firsts).toEqual([
      false,
      false,
      false,
      false,
      false,
      false,
      true,
      true,
      true,
      true,
    ]);
    // Handed once, every record counts once towards `countFirst`.
    expect(retry.state).toEqual({ committed: true, frontier: 23n, handed: 24 });
    expect(declareFirstDeliveries(retry.state, [5n, 23n], 10).firsts).toEqual([false, false]);
  });

  it('declares nothing after a failed commit until a commit succeeds again', () => {
    let state: PartitionDeliveries = declareFirstDeliveries(JUST_ASSIGNED, offsets(0, 9), 10).state;
    state = afterCommit(afterCommit(state, true), false);
    const blocked = declareFirstDeliveries(state, offsets(10, 19), 10);
    expect(blocked.firsts.some((f) => f)).toBe(false);
    state = afterCommit(blocked.state, true);
    expect(declareFirstDeliveries(state, [20n], 10).firsts).toEqual([true]);
  });
});

describe('createFirstDeliveryTracker', () => {
  it('keeps partitions apart and forgets them all on reset (a rebalance)', () => {
    const tracker = createFirstDeliveryTracker(2);
    const all = (n: number, from: number): string[] =>
      Array.from({ length: n }, (_, i) => String(from + i));
    expect(tracker.hand('t\u00000', all(2, 0))).toEqual([false, false]);
    tracker.committed('t\u00000', true);
    expect(tracker.hand('t\u00001', all(2, 0))).toEqual([false, false]);
    expect(tracker.hand('t\u00000', all(2, 2))).toEqual([true, true]);
    // Partition 1 had no commit yet.
    expect(tracker.hand('t\u00001', all(2, 2))).toEqual([false, false]);
    tracker.reset();
    expect(tracker.hand('t\u00000', all(2, 4))).toEqual([false, false]);
    tracker.committed('t\u00000', true);
    expect(tracker.hand('t\u00000', all(1, 6))).toEqual([true]);
  });
});

/** A batch context over in-memory records whose commits can be made to fail. */
function fakeContext(
  records: KafkaRecord[],
  commits: { fail: boolean; made: string[] },
): KafkaBatchContext {
  return {
    batch: { topic: 't', partition: 0, highWatermark: '0', messages: records },
    resolveOffset: () => undefined,
    heartbeat: async () => undefined,
    pause: () => () => undefined,
    commitOffsetsIfNecessary: async (offsets) => {
      if (commits.fail) throw new Error('commit refused');
      commits.made.push(offsets!.topics[0]!.partitions[0]!.offset);
    },
    isRunning: () => true,
    isStale: () => false,
  };
}

const recordAt = (offset: number): KafkaRecord => ({
  key: null,
  value: Buffer.from('x'),
  offset: String(offset),
  timestamp: '0',
  headers: { 'message-id': `m-${offset}` },
});

describe.each(['batch', 'message'] as const)('the batch processor in %s mode', (mode) => {
  it('declares first deliveries by the same rule, resetting on a rejoin and a failed commit', async () => {
    const seen = new Map<string, Array<boolean | undefined>>();
    const processed = (envelope: Envelope): InboxOutcome<unknown> => {
      const facts = seen.get(envelope.delivery.offset!) ?? [];
      facts.push(envelope.delivery.redelivered === false ? true : undefined);
      seen.set(envelope.delivery.offset!, facts);
      // Counted records carry no first-delivery facts at all.
      if (envelope.delivery.redelivered !== false) {
        expect('redelivered' in envelope.delivery).toBe(false);
      }
      return { status: 'processed', messageId: envelope.id!, scope: '', attempt: 1, result: 0 };
    };
    const inbox = {
      consumer: 'c',
      process: async (envelope: Envelope) => processed(envelope),
      processBatch: async (envelopes: readonly Envelope[]) => envelopes.map(processed),
    } as unknown as Inbox;
    let generation = 0;
    const processor = createBatchProcessor({
      inbox,
      handler: async () => undefined,
      mode,
      batchSize: 3,
      envelope: {
        messageId: { header: 'message-id', fallback: true, extract: undefined },
        scopeHeader: 'tenant',
        onExtractError: () => undefined,
      },
      consumer: { seek: () => undefined },
      heartbeatEveryMs: 60_000,
      generation: () => generation,
      forwardDeadLetter: async () => 'dl',
      logger: silentLogger,
    });
    const commits = { fail: false, made: [] as string[] };
    const firstsOf = (from: number, to: number): Array<boolean | undefined> =>
      Array.from({ length: to - from + 1 }, (_, i) => seen.get(String(from + i))!.at(-1));

    // Chunks 0–2 (counted, then committed) and 3–5, 6–7 (declared).
    await processor.eachBatch(fakeContext([0, 1, 2, 3, 4, 5, 6, 7].map(recordAt), commits));
    expect(commits.made).toEqual(['3', '6', '8']);
    expect(firstsOf(0, 7)).toEqual([undefined, undefined, undefined, true, true, true, true, true]);

    // A re-fetch of 6–7 (at or below the frontier) is counted; 8 above it is declared.
    await processor.eachBatch(fakeContext([6, 7, 8].map(recordAt), commits));
    expect(firstsOf(6, 8)).toEqual([undefined, undefined, true]);

    // A rejoin: the first chunk is counted again, then records are declared after its commit.
    generation += 1;
    processor.reset();
    await processor.eachBatch(fakeContext([9, 10, 11, 12].map(recordAt), commits));
    expect(firstsOf(9, 12)).toEqual([undefined, undefined, undefined, true]);

    // A failed commit: nothing is declared until a commit succeeds again.
    commits.fail = true;
    await expect(
      processor.eachBatch(fakeContext([13, 14, 15].map(recordAt), commits)),
    ).rejects.toThrow('commit refused');
    expect(firstsOf(13, 15)).toEqual([true, true, true]);
    commits.fail = false;
    await processor.eachBatch(fakeContext([16, 17, 18, 19, 20, 21].map(recordAt), commits));
    expect(firstsOf(16, 21)).toEqual([undefined, undefined, undefined, true, true, true]);
    processor.dispose();
  });
});
