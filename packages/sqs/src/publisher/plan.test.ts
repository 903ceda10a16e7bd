import type { PreparedEntry } from './entry';
import { planBatches } from './plan';

const entry = (index: number, key: string | null, bytes = 10): PreparedEntry => ({
  index,
  bytes,
  entry: { MessageBody: 'x' },
  message: {
    messageId: `m${index}`,
    destination: 'q',
    key,
    headers: {},
    payload: new Uint8Array(),
  },
});

describe('planBatches', () => {
  it('cuts batches at ten entries and at the byte limit, keeping order', () => {
    const batches = planBatches(
      'q',
      Array.from({ length: 23 }, (_, i) => entry(i, null)),
      1_000,
    );
    expect(batches.map((b) => b.entries.length)).toEqual([10, 10, 3]);
    expect(batches.flatMap((b) => b.entries.map((e) => e.index))).toEqual([...Array(23).keys()]);
    const bySize = planBatches(
      'q',
      [entry(0, null, 600), entry(1, null, 600), entry(2, null, 300)],
      1_000,
    );
    expect(bySize.map((b) => b.entries.map((e) => e.index))).toEqual([[0], [1, 2]]);
  });

  it('makes a batch wait only for earlier batches that share one of its keys', () => {
    const entries = Array.from({ length: 30 }, (_, i) =>
      entry(i, i < 10 ? 'a' : i < 20 ? 'b' : i === 25 ? 'a' : null),
    );
    const [first, second, third] = planBatches('q', entries, 10_000);
    expect(first?.after).toEqual([]);
    expect(second?.after).toEqual([]);
    expect(third?.after).toEqual([first]);
  });
});
