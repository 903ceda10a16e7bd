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
    const queue = new WorkQueue<number>(2, async (n) => {
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
    const queue = new WorkQueue<string>(1, async (s) => {
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
});
