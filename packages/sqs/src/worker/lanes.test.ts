import { GroupLanes } from './lanes';

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('GroupLanes', () => {
  it('runs one group in order and different groups side by side', async () => {
    const lanes = new GroupLanes();
    const log: string[] = [];
    let releaseA!: () => void;
    const gateA = new Promise<void>((resolve) => (releaseA = resolve));
    const a1 = lanes.enqueue('a', async () => {
      log.push('a1 start');
      await gateA;
      log.push('a1 end');
      return false;
    });
    const a2 = lanes.enqueue('a', async () => {
      log.push('a2');
      return false;
    });
    const b1 = lanes.enqueue('b', async () => {
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
    const run = (heldBack: boolean) =>
      lanes.enqueue('g', async (behind) => {
        seen.push(behind);
        return heldBack;
      });
    await Promise.all([run(false), run(true), run(false), run(false)]);
    expect(seen).toEqual([false, false, true, true]);
    await tick();
    await run(false);
    expect(seen).toEqual([false, false, true, true, false]);
  });
});
