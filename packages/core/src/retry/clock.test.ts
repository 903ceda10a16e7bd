import { systemClock } from './clock';
import { createManualClock } from './manual-clock';

describe('systemClock', () => {
  it('resolves a zero-length sleep', async () => {
    await expect(systemClock.sleep(0)).resolves.toBeUndefined();
  });

  it('rejects at once with the reason of an already aborted signal', async () => {
    const reason = new Error('stop');
    await expect(systemClock.sleep(60_000, AbortSignal.abort(reason))).rejects.toBe(reason);
  });

  it('rejects a running sleep when its signal aborts, without waiting', async () => {
    const controller = new AbortController();
    const sleeping = systemClock.sleep(60_000, controller.signal);
    const reason = new Error('cancelled');
    controller.abort(reason);
    await expect(sleeping).rejects.toBe(reason);
  });
});

describe('createManualClock', () => {
  it('fires sleeps in time order as time advances, and not before', async () => {
    const clock = createManualClock(1_000);
    const fired: string[] = [];
    void clock.sleep(300).then(() => fired.push(`b@${clock.now()}`));
    void clock.sleep(100).then(() => fired.push(`a@${clock.now()}`));
    await clock.advance(99);
    expect(fired).toEqual([]);
    expect(clock.now()).toBe(1_099);
    await clock.advance(500);
    expect(fired).toEqual(['a@1100', 'b@1300']);
    expect(clock.now()).toBe(1_599);
    expect(clock.pendingTimers).toBe(0);
  });

  it('drops an aborted sleep', async () => {
    const clock = createManualClock();
    const controller = new AbortController();
    const sleeping = clock.sleep(100, controller.signal);
    expect(clock.pendingTimers).toBe(1);
    controller.abort(new Error('no'));
    await expect(sleeping).rejects.toThrow('no');
    expect(clock.pendingTimers).toBe(0);
  });

  it('runAll jumps to each timer, including ones scheduled by earlier timers', async () => {
    const clock = createManualClock();
    const seen: number[] = [];
    void clock.sleep(10).then(async () => {
      seen.push(clock.now());
      await clock.sleep(25);
      seen.push(clock.now());
    });
    await clock.runAll();
    expect(seen).toEqual([10, 35]);
  });

  it('runAll refuses to spin forever', async () => {
    const clock = createManualClock();
    const loop = async (): Promise<void> => {
      for (;;) await clock.sleep(1);
    };
    void loop();
    await expect(clock.runAll(50)).rejects.toThrow('runAll fired 50 timers');
  });
});
