import { unlessHalted } from './run';
import type { ProcessorRuntime } from '../types';

/** The two fields of the processor's runtime that `unlessHalted` reads. */
function runtime(): ProcessorRuntime<unknown> {
  const part: Pick<ProcessorRuntime<unknown>, 'halted' | 'haltListeners'> = {
    halted: undefined,
    haltListeners: new Set(),
  };
  return part as ProcessorRuntime<unknown>;
}

function halt(rt: ProcessorRuntime<unknown>, reason: string): void {
  rt.halted = new Error(reason);
  for (const listener of rt.haltListeners) listener(rt.halted);
}

describe('unlessHalted', () => {
  it("gives the work's value, and keeps no listener once the work ended", async () => {
    const rt = runtime();
    for (let i = 0; i < 1_000; i++) {
      await expect(unlessHalted(rt, Promise.resolve(i))).resolves.toEqual({ value: i });
    }
    await expect(unlessHalted(rt, Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    expect(rt.haltListeners.size).toBe(0);
  });

  it('gives the reason of a halt at once, and whatever the work ends with after is ignored', async () => {
    const rt = runtime();
    let fail: (error: Error) => void = () => undefined;
    const work = new Promise<number>((_, reject) => (fail = reject));
    const ended = unlessHalted(rt, work);
    halt(rt, 'stopped without draining');
    await expect(ended).resolves.toEqual({ halted: new Error('stopped without draining') });
    // A rejection after the halt is handled: no unhandled rejection, nothing reported.
    fail(new Error('late'));
    await new Promise((resolve) => setImmediate(resolve));
  });

  it('answers a chunk begun after the halt with the halt', async () => {
    const rt = runtime();
    halt(rt, 'halted before');
    const late = Promise.reject(new Error('never read'));
    await expect(unlessHalted(rt, late)).resolves.toEqual({ halted: new Error('halted before') });
    expect(rt.haltListeners.size).toBe(0);
  });
});
