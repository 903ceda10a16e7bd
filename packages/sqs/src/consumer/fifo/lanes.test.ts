import { GroupLanes } from './lanes';

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('GroupLanes', () => {
  it('runs one group in order and different groups side by side', async () => {
    const lanes = new GroupLanes();
    const log: string[] = [];
    let releaseA!: () => void;
    const gateA = new Promise<void>((resolve) => (releaseA = resolve));
    const a1 = lanes.enqueue('a', 1, async () => {
      log.push('a1 start');
      await gateA;
      log.push('a1 end');
      return false;
    });
    const a2 = lanes.enqueue('a', 2, async () => {
      log.push('a2');
      return false;
    });
    const b1 = lanes.enqueue('b', 3, async () => {
      log.push('b1');
      return false;
    });
    await b1;
    expect(log).toEqual(['a1 start', 'b1']);
    releaseA();
    await Promise.all([a1, a2]);
    expect(log).toEqual(['a1 start', 'b1', 'a1 end', 'a2']);
  });

  it('tells the later messages of a group that an earlier one was held back, until the lane empties', async () => {
    const lanes = new GroupLanes();
    const seen: boolean[] = [];
    let seq = 0;
    const run = (heldBack: boolean) =>
      lanes.enqueue('g', ++seq, async (behind) => {
        seen.push(behind);
        return heldBack;
      });
    await Promise.all([run(false), run(true), run(false), run(false)]);
    expect(seen).toEqual([false, false, true, true]);
    await tick();
    await run(false);
    expect(seen).toEqual([false, false, true, true, false]);
  });

  it('runs a message of the group received after a hold-back, even before the lane has emptied', async () => {
    const lanes = new GroupLanes();
    const seen: Array<[string, boolean]> = [];
    let redelivery: Promise<void> | undefined;
    // m1 fails and is held back; m2, received with it, is released behind it. The broker then
    // hands m1 out again, and the answer is read before m2's release has finished.
    const m1 = lanes.enqueue('g', 1, async (behind) => {
      seen.push(['m1', behind]);
      return true;
    });
    const m2 = lanes.enqueue('g', 2, async (behind) => {
      seen.push(['m2', behind]);
      redelivery = lanes.enqueue('g', 3, async (again) => {
        seen.push(['m1 again', again]);
        return false;
      });
      return true;
    });
    await Promise.all([m1, m2]);
    await redelivery;
    expect(seen).toEqual([
      ['m1', false],
      ['m2', true],
      ['m1 again', false],
    ]);
    // A message received with the redelivery and behind a new hold-back is released again.
    const after: boolean[] = [];
    await Promise.all([
      lanes.enqueue('g', 4, async (behind) => (after.push(behind), true)),
      lanes.enqueue('g', 5, async (behind) => (after.push(behind), false)),
    ]);
    expect(after).toEqual([false, true]);
  });
});
