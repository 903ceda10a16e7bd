import type { PreparedEntry } from './prepared-entry';
import { planBatches, type PlannedBatch } from './plan';

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
      4,
    );
    expect(batches.map((b) => b.entries.length)).toEqual([10, 10, 3]);
    expect(batches.flatMap((b) => b.entries.map((e) => e.index))).toEqual([...Array(23).keys()]);
    const bySize = planBatches(
      'q',
      [entry(0, null, 600), entry(1, null, 600), entry(2, null, 300)],
      1_000,
      4,
    );
    expect(bySize.map((b) => b.entries.map((e) => e.index))).toEqual([[0], [1, 2]]);
  });

  it('makes a batch wait only for earlier batches that share one of its keys', () => {
    const entries = Array.from({ length: 30 }, (_, i) =>
      entry(i, i < 10 ? 'a' : i < 20 ? 'b' : i === 25 ? 'a' : null),
    );
    const [first, second, third] = planBatches('q', entries, 10_000, 4);
    expect(first?.after).toEqual([]);
    expect(second?.after).toEqual([]);
    expect(third?.after).toEqual([first]);
  });

  /** How many batches deep the longest chain of waits is. */
  const depth = (batches: readonly PlannedBatch[]): number => {
    const of = new Map<PlannedBatch, number>();
    for (const b of batches) of.set(b, 1 + Math.max(0, ...b.after.map((a) => of.get(a)!)));
    return Math.max(...of.values());
  };
  /** Each key's entry indexes in the order the batches send them. */
  const sentOrder = (batches: readonly PlannedBatch[]): Map<string | null, number[]> => {
    const order = new Map<string | null, number[]>();
    for (const e of batches.flatMap((b) => b.entries)) {
      order.set(e.message.key, [...(order.get(e.message.key) ?? []), e.index]);
    }
    return order;
  };

  it('gathers the entries of keys that take turns into runs, so the chains of waits stay short', () => {
    // 25 keys taking turns, 8 entries each: in call order every batch would hold one entry
    // of ten keys and wait for the batches before it that had them, 10 deep.
    const entries = Array.from({ length: 200 }, (_, i) => entry(i, `k${i % 25}`));
    const batches = planBatches('q', entries, 10_000, 4);
    expect(batches).toHaveLength(20);
    // 20 batches at 4 at a time take 5 turns: no chain is deeper.
    expect(depth(batches)).toBeLessThanOrEqual(5);
    for (const [, indexes] of sentOrder(batches)) {
      expect(indexes).toEqual([...indexes].sort((a, b) => a - b));
    }
    // Every batch waits only for earlier ones, and for each earlier batch holding its keys.
    batches.forEach((b, i) => {
      for (const a of b.after) expect(batches.indexOf(a)).toBeLessThan(i);
      const keys = new Set(b.entries.map((e) => e.message.key));
      const last = batches
        .slice(0, i)
        .filter((a) => a.entries.some((e) => keys.has(e.message.key)));
      for (const key of keys) {
        const lastOfKey = [...last]
          .reverse()
          .find((a) => a.entries.some((e) => e.message.key === key));
        if (lastOfKey) expect(b.after).toContain(lastOfKey);
      }
    });
    // At two requests at a time the batches take 10 turns anyway: they stay in call order,
    // one entry of each of ten keys per batch, each batch waiting for the one or two before
    // it: 10 deep.
    const twoAtATime = planBatches('q', entries, 10_000, 2);
    expect(twoAtATime.flatMap((b) => b.entries.map((e) => e.index))).toEqual([
      ...Array(200).keys(),
    ]);
    expect(depth(twoAtATime)).toBe(10);
  });

  it('leaves the order alone when no key repeats, and keeps a lone key in order', () => {
    const distinct = Array.from({ length: 30 }, (_, i) => entry(i, `k${i}`));
    expect(
      planBatches('q', distinct, 10_000, 4).flatMap((b) => b.entries.map((e) => e.index)),
    ).toEqual([...Array(30).keys()]);
    const lone = Array.from({ length: 30 }, (_, i) => entry(i, i % 3 === 0 ? null : 'only'));
    const batches = planBatches('q', lone, 10_000, 4);
    expect(sentOrder(batches).get('only')).toEqual(
      lone.filter((e) => e.message.key === 'only').map((e) => e.index),
    );
    expect(batches.flatMap((b) => b.entries)).toHaveLength(30);
  });
});
