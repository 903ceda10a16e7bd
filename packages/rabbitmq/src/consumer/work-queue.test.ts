import { WorkQueue } from './work-queue';

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

describe('WorkQueue', () => {
  it('runs at most `concurrency` jobs at once, in arrival order', async () => {
    const started: number[] = [];
    const gates = new Map<number, ReturnType<typeof deferred>>();
    const queue = new WorkQueue<number>(2, async ([n]) => {
      if (n === undefined) throw new Error('an empty run');
      started.push(n);
      const gate = deferred();
      gates.set(n, gate);
      await gate.promise;
    });
    for (const n of [1, 2, 3, 4]) queue.push(n);
    expect(started).toEqual([1, 2]);
    expect(queue.active).toBe(2);
    expect(queue.pending).toBe(2);
    gates.get(2)!.resolve();
    await new Promise((r) => setImmediate(r));
    expect(started).toEqual([1, 2, 3]);
    gates.get(1)!.resolve();
    gates.get(3)!.resolve();
    await new Promise((r) => setImmediate(r));
    gates.get(4)!.resolve();
    await queue.idle();
    expect(started).toEqual([1, 2, 3, 4]);
    expect(queue.active).toBe(0);
  });

  it('drops waiting jobs on request and keeps going after a job throws', async () => {
    const ran: string[] = [];
    const gate = deferred();
    const queue = new WorkQueue<string>(1, async ([s = '']) => {
      ran.push(s);
      if (s === 'first') await gate.promise;
      if (s === 'boom') throw new Error('boom');
    });
    for (const s of ['first', 'a-1', 'b-1', 'a-2', 'boom', 'after']) queue.push(s);
    expect(queue.drop((s) => s.startsWith('a-'))).toEqual(['a-1', 'a-2']);
    gate.resolve();
    await queue.idle();
    expect(ran).toEqual(['first', 'b-1', 'boom', 'after']);
  });

  it('hands waiting jobs over in batches, and lingers for a short one to fill', async () => {
    const runs: number[][] = [];
    const gate = deferred();
    const queue = new WorkQueue<number>(
      1,
      async (items) => {
        runs.push([...items]);
        if (runs.length === 1) await gate.promise;
      },
      { size: 3, waitMs: 20 },
    );
    queue.push(1);
    // Lingering: one job, a batch of three, the wait not over.
    expect(runs).toEqual([]);
    queue.push(2);
    queue.push(3);
    // Full: it runs at once.
    expect(runs).toEqual([[1, 2, 3]]);
    for (const n of [4, 5, 6, 7]) queue.push(n);
    gate.resolve();
    await new Promise((r) => setImmediate(r));
    expect(runs).toEqual([
      [1, 2, 3],
      [4, 5, 6],
    ]);
    // The short remainder runs when the linger ends.
    await queue.idle();
    expect(runs).toEqual([[1, 2, 3], [4, 5, 6], [7]]);
  });

  it('drops a lingering batch without running it', async () => {
    const runs: number[][] = [];
    const queue = new WorkQueue<number>(1, async (items) => void runs.push([...items]), {
      size: 5,
      waitMs: 10,
    });
    queue.push(1);
    expect(queue.drop(() => true)).toEqual([1]);
    await queue.idle();
    await new Promise((r) => setTimeout(r, 30));
    expect(runs).toEqual([]);
  });
});
