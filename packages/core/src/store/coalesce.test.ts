import fc from 'fast-check';
import { createCoalescer, type CoalescerOptions } from './coalesce';

/** A call the test lets finish when it wants. */
interface Pending<T> {
  readonly items: T;
  finish(): void;
  fail(error: unknown): void;
}

/**
 * A coalescer over statements the test finishes by hand: `alone` and `groups` list what was
 * sent, in order; each statement returns its items doubled.
 */
function harness(options: Partial<CoalescerOptions<number, number>> = {}) {
  const alone: Array<Pending<number>> = [];
  const groups: Array<Pending<readonly number[]>> = [];
  const coalescer = createCoalescer<number, number>({
    one: (item) =>
      new Promise((resolve, reject) => {
        alone.push({ items: item, finish: () => resolve(item * 2), fail: reject });
      }),
    many: (items) =>
      new Promise((resolve, reject) => {
        groups.push({ items, finish: () => resolve(items.map((i) => i * 2)), fail: reject });
      }),
    key: (item) => String(item % 100).padStart(2, '0'),
    ...options,
  });
  return { coalescer, alone, groups };
}

const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * With one statement in flight: runs 1 (sent alone and finished), then `items` while it is
 * on its way, and waits until they were sent as a group.
 */
async function groupBehindOne(items: readonly number[]) {
  const h = harness({ maxInFlight: 1 });
  const first = h.coalescer.run(1);
  const rest = items.map((i) => h.coalescer.run(i));
  expect(h.groups).toHaveLength(0);
  h.alone[0]!.finish();
  await first;
  await tick();
  return { ...h, rest };
}

describe('createCoalescer', () => {
  it('sends a call made while nothing is on its way at once, alone', async () => {
    const { coalescer, alone, groups } = harness();
    const result = coalescer.run(3);
    expect(alone.map((p) => p.items)).toEqual([3]);
    alone[0]!.finish();
    await expect(result).resolves.toBe(6);
    expect(groups).toHaveLength(0);
  });

  it('groups the calls made while the statements in flight are on their way', async () => {
    const { groups, rest } = await groupBehindOne([5, 2, 4]);
    // Sent in key order, so that two groups lock their rows in the same order.
    expect(groups.map((g) => g.items)).toEqual([[2, 4, 5]]);
    groups[0]!.finish();
    await expect(Promise.all(rest)).resolves.toEqual([10, 4, 8]);
  });

  it('never puts two calls on the same row into one statement', async () => {
    const { coalescer, alone, groups } = harness({ maxInFlight: 1 });
    const calls = [1, 7, 107, 207, 8].map((i) => coalescer.run(i));
    alone[0]!.finish();
    await tick();
    expect(groups.map((g) => g.items)).toEqual([[7, 8]]);
    groups[0]!.finish();
    await tick();
    expect(alone.map((p) => p.items)).toEqual([1, 107]);
    alone[1]!.finish();
    await tick();
    expect(alone.map((p) => p.items)).toEqual([1, 107, 207]);
    alone[2]!.finish();
    await expect(Promise.all(calls)).resolves.toEqual([2, 14, 214, 414, 16]);
  });

  it('sends no more than maxBatch calls in one statement', async () => {
    const { coalescer, alone, groups } = harness({ maxInFlight: 1, maxBatch: 2 });
    const calls = [1, 2, 3, 4, 5].map((i) => coalescer.run(i));
    alone[0]!.finish();
    await tick();
    expect(groups.map((g) => g.items)).toEqual([[2, 3]]);
    groups[0]!.finish();
    await tick();
    expect(groups.map((g) => g.items)).toEqual([
      [2, 3],
      [4, 5],
    ]);
    groups[1]!.finish();
    await expect(Promise.all(calls)).resolves.toEqual([2, 4, 6, 8, 10]);
  });

  it("runs each call of a group alone when the group fails for one call's data", async () => {
    const { alone, groups, rest } = await groupBehindOne([2, 3]);
    groups[0]!.fail(Object.assign(new Error('invalid input syntax'), { code: '22P02' }));
    await tick();
    expect(alone.slice(1).map((p) => p.items)).toEqual([2, 3]);
    alone[1]!.finish();
    alone[2]!.fail(new Error('row 3 is bad'));
    const settled = await Promise.allSettled(rest);
    expect(settled[0]).toEqual({ status: 'fulfilled', value: 4 });
    expect(settled[1]).toMatchObject({ status: 'rejected', reason: { message: 'row 3 is bad' } });
  });

  it('fails every call of a group with an outage of the store, without running them again', async () => {
    const { alone, groups, rest } = await groupBehindOne([2, 3]);
    const lost = Object.assign(new Error('Connection terminated unexpectedly'), {
      code: 'ECONNRESET',
    });
    groups[0]!.fail(lost);
    for (const call of rest) await expect(call).rejects.toBe(lost);
    expect(alone).toHaveLength(1);
  });

  it('gives every call its own result, whatever the calls and however they are grouped', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.integer({ min: 0, max: 30 }), { maxLength: 60 }),
        fc.integer({ min: 1, max: 4 }),
        fc.integer({ min: 1, max: 8 }),
        async (items, maxInFlight, maxBatch) => {
          const sent: number[][] = [];
          const later = (): Promise<void> => new Promise((r) => setTimeout(r, 0));
          const coalescer = createCoalescer<number, string>({
            one: async (item) => {
              sent.push([item]);
              await later();
              return `r${item}`;
            },
            many: async (group) => {
              sent.push([...group]);
              await later();
              return group.map((item) => `r${item}`);
            },
            key: (item) => String(item % 10),
            maxInFlight,
            maxBatch,
          });
          const results = await Promise.all(items.map((item) => coalescer.run(item)));
          expect(results).toEqual(items.map((item) => `r${item}`));
          for (const group of sent) {
            expect(group.length).toBeLessThanOrEqual(maxBatch);
            expect(new Set(group.map((i) => i % 10)).size).toBe(group.length);
          }
          expect(sent.flat().sort((a, b) => a - b)).toEqual([...items].sort((a, b) => a - b));
        },
      ),
      { numRuns: 100 },
    );
  });
});
