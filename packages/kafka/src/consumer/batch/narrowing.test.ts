import { silentLogger, type Inbox, type InboxOutcome } from '@justonce/core';
import type { Envelope } from '@justonce/core/transport';
import { createBatchProcessor } from './processor';
import type { KafkaBatchContext, KafkaRecord } from '../../client/types';
import { narrowAfterFailure, nextChunk } from './narrowing';

const offsets = (...ns: number[]): bigint[] => ns.map((n) => BigInt(n));

describe('nextChunk', () => {
  it('takes batchSize records when nothing is narrowed', () => {
    expect(nextChunk(undefined, offsets(0, 1, 2, 3, 4), 3)).toEqual({
      size: 3,
      narrowing: undefined,
    });
    expect(nextChunk(undefined, offsets(0, 1), 3).size).toBe(2);
  });

  it('takes at most the narrowed size, never past the stretch, and ends the stretch past it', () => {
    const narrowing = { until: 7n, size: 4 };
    expect(nextChunk(narrowing, offsets(0, 1, 2, 3, 4, 5, 6, 7), 8)).toEqual({
      size: 4,
      narrowing,
    });
    expect(nextChunk(narrowing, offsets(6, 7, 8, 9, 10), 8).size).toBe(2);
    // Offsets may have gaps (compaction): the stretch is by offset, not by count.
    expect(nextChunk(narrowing, offsets(5, 9, 10), 8).size).toBe(1);
    expect(nextChunk(narrowing, offsets(8, 9, 10), 8)).toEqual({ size: 3, narrowing: undefined });
  });
});

describe('narrowAfterFailure', () => {
  it('halves the failed chunk, rounding up, down to one record, and keeps the farther end', () => {
    expect(narrowAfterFailure(undefined, offsets(0, 1, 2, 3, 4, 5, 6, 7))).toEqual({
      until: 7n,
      size: 4,
    });
    expect(narrowAfterFailure(undefined, offsets(3, 4, 5, 6, 7))).toEqual({ until: 7n, size: 3 });
    expect(narrowAfterFailure({ until: 7n, size: 2 }, offsets(4, 5))).toEqual({
      until: 7n,
      size: 1,
    });
    expect(narrowAfterFailure({ until: 7n, size: 1 }, offsets(5))).toEqual({ until: 7n, size: 1 });
  });
});

const recordAt = (offset: number): KafkaRecord => ({
  key: null,
  value: Buffer.from(`v-${offset}`),
  offset: String(offset),
  timestamp: '0',
  headers: { 'message-id': `m-${offset}` },
});

describe('the batch processor in batch mode, when the inbox call fails for the whole chunk', () => {
  it('retries the chunk in halves, then one by one: the good records commit, only the bad one comes back', async () => {
    const BAD = '5';
    const handed: string[][] = [];
    const processed = new Map<string, number>();
    let badAlone = 0;
    // Stands in for an inbox that throws whenever the bad record is in the call (a record
    // that breaks the statement or the connection), and whose attempt count dead-letters
    // it once it has failed alone three times.
    const inbox = {
      consumer: 'c',
      process: async () => {
        throw new Error('not used in batch mode');
      },
      processBatch: async (envelopes: readonly Envelope[]): Promise<InboxOutcome<number>[]> => {
        const at = envelopes.map((e) => e.delivery.offset!);
        handed.push(at);
        if (at.includes(BAD)) {
          if (at.length > 1 || ++badAlone < 3) throw new Error('the statement failed');
          return [
            {
              status: 'dead-lettered',
              messageId: envelopes[0]!.id!,
              scope: 'default',
              attempt: 3,
              reason: 'MAX_ATTEMPTS',
              error: new Error('gave up'),
              deadLetterId: '1',
            },
          ];
        }
        return envelopes.map((e) => {
          processed.set(e.id!, (processed.get(e.id!) ?? 0) + 1);
          return { status: 'processed', messageId: e.id!, scope: 'default', attempt: 1, result: 0 };
        });
      },
    } as unknown as Inbox;

    let seekTo: string | undefined;
    const commits: string[] = [];
    const deadLettered: string[] = [];
    const processor = createBatchProcessor({
      inbox,
      handler: async () => 0,
      mode: 'batch',
      batchSize: 8,
      envelope: {
        messageId: { header: 'message-id', fallback: true, extract: undefined },
        scopeHeader: 'tenant',
        onExtractError: () => undefined,
      },
      consumer: { seek: ({ offset }) => (seekTo = offset) },
      heartbeatEveryMs: 60_000,
      generation: () => 0,
      forwardDeadLetter: async ({ record }) => {
        deadLettered.push(record.offset);
        return 'dlq';
      },
      logger: silentLogger,
    });

    const all = Array.from({ length: 10 }, (_, i) => recordAt(i));
    let from = 0;
    for (let fetches = 0; fetches < 20 && from < all.length; fetches++) {
      seekTo = undefined;
      await processor.eachBatch(fakeContext(all.slice(from), commits));
      // A seek means "deliver again from there"; otherwise the batch was finished.
      from = seekTo === undefined ? all.length : Number(seekTo);
    }
    processor.dispose();

    expect(handed).toEqual([
      ['0', '1', '2', '3', '4', '5', '6', '7'],
      ['0', '1', '2', '3'],
      ['4', '5', '6', '7'],
      ['4', '5'],
      ['4'],
      ['5'],
      ['5'],
      ['5'],
      ['6'],
      ['7'],
      // Past the stretch that failed, chunks are batchSize again.
      ['8', '9'],
    ]);
    // Offsets are committed chunk by chunk, never past the record held back.
    expect(commits).toEqual(['4', '5', '6', '7', '8', '10']);
    expect(deadLettered).toEqual([BAD]);
    expect([...processed.keys()].sort()).toEqual(
      ['0', '1', '2', '3', '4', '6', '7', '8', '9'].map((n) => `m-${n}`).sort(),
    );
    expect([...processed.values()].every((n) => n === 1)).toBe(true);
  });
});

function fakeContext(records: KafkaRecord[], commits: string[]): KafkaBatchContext {
  return {
    batch: { topic: 't', partition: 0, highWatermark: '0', messages: records },
    resolveOffset: () => undefined,
    heartbeat: async () => undefined,
    pause: () => () => undefined,
    commitOffsetsIfNecessary: async (offsets) => {
      commits.push(offsets!.topics[0]!.partitions[0]!.offset);
    },
    isRunning: () => true,
    isStale: () => false,
  };
}
