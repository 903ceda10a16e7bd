import { ConfigurationError } from '../errors';
import type { CircuitStateChange, CircuitTrip } from './circuit-breaker';
import { createCircuitBreaker, isCircuitBreaker } from './circuit-breaker';
import { createManualClock } from './manual-clock';

function fail(breaker: ReturnType<typeof createCircuitBreaker>, times: number): void {
  for (let i = 0; i < times; i++) breaker.tryAcquire()?.failure();
}

describe('createCircuitBreaker', () => {
  it('opens after the consecutive-failure threshold; a success resets the run', () => {
    const clock = createManualClock();
    const breaker = createCircuitBreaker({ clock, trip: { consecutiveFailures: 3 } });
    fail(breaker, 2);
    breaker.tryAcquire()?.success();
    fail(breaker, 2);
    expect(breaker.state).toBe('closed');
    fail(breaker, 1);
    expect(breaker.state).toBe('open');
    expect(breaker.tryAcquire()).toBeUndefined();
  });

  it('defaults to 5 consecutive failures and 30 s open', async () => {
    const clock = createManualClock();
    const breaker = createCircuitBreaker({ clock });
    fail(breaker, 4);
    expect(breaker.state).toBe('closed');
    fail(breaker, 1);
    expect(breaker.state).toBe('open');
    expect(breaker.retryAfterMs()).toBe(30_000);
    await clock.advance(29_999);
    expect(breaker.tryAcquire()).toBeUndefined();
    expect(breaker.retryAfterMs()).toBe(1);
    await clock.advance(1);
    expect(breaker.tryAcquire()).toBeDefined();
    expect(breaker.state).toBe('half-open');
  });

  it('half-open lets exactly one probe through; its success closes the breaker', async () => {
    const clock = createManualClock();
    const changes: CircuitStateChange[] = [];
    const breaker = createCircuitBreaker({
      clock,
      trip: { consecutiveFailures: 1 },
      openMs: 1_000,
    });
    breaker.onStateChange((change) => changes.push(change));
    fail(breaker, 1);
    await clock.advance(1_000);
    const probe = breaker.tryAcquire();
    expect(probe).toBeDefined();
    expect(breaker.tryAcquire()).toBeUndefined();
    expect(breaker.retryAfterMs()).toBe(0);
    await clock.advance(10);
    probe?.success();
    expect(breaker.state).toBe('closed');
    expect(breaker.tryAcquire()).toBeDefined();
    expect(changes).toEqual([
      { from: 'closed', to: 'open', at: 0 },
      { from: 'open', to: 'half-open', at: 1_000 },
      { from: 'half-open', to: 'closed', at: 1_010 },
    ]);
  });

  it('a failed probe opens the breaker for another full period', async () => {
    const clock = createManualClock();
    const breaker = createCircuitBreaker({
      clock,
      trip: { consecutiveFailures: 1 },
      openMs: 1_000,
    });
    fail(breaker, 1);
    await clock.advance(1_500);
    breaker.tryAcquire()?.failure();
    expect(breaker.state).toBe('open');
    expect(breaker.retryAfterMs()).toBe(1_000);
    await clock.advance(999);
    expect(breaker.tryAcquire()).toBeUndefined();
  });

  it('a released probe frees the slot for the next caller without deciding anything', async () => {
    const clock = createManualClock();
    const breaker = createCircuitBreaker({ clock, trip: { consecutiveFailures: 1 }, openMs: 100 });
    fail(breaker, 1);
    await clock.advance(100);
    breaker.tryAcquire()?.release();
    expect(breaker.state).toBe('half-open');
    const next = breaker.tryAcquire();
    expect(next).toBeDefined();
    next?.success();
    expect(breaker.state).toBe('closed');
  });

  it('a probe that never reports is replaced after openMs', async () => {
    const clock = createManualClock();
    const breaker = createCircuitBreaker({ clock, trip: { consecutiveFailures: 1 }, openMs: 100 });
    fail(breaker, 1);
    await clock.advance(100);
    const lost = breaker.tryAcquire();
    await clock.advance(99);
    expect(breaker.tryAcquire()).toBeUndefined();
    await clock.advance(1);
    const second = breaker.tryAcquire();
    expect(second).toBeDefined();
    lost?.failure(); // stale: ignored
    expect(breaker.state).toBe('half-open');
    second?.success();
    expect(breaker.state).toBe('closed');
  });

  it('ignores outcomes reported after the state changed, and second reports', () => {
    const clock = createManualClock();
    const breaker = createCircuitBreaker({ clock, trip: { consecutiveFailures: 2 } });
    const early = breaker.tryAcquire();
    const first = breaker.tryAcquire();
    first?.failure();
    first?.failure(); // second report of the same permit: ignored
    expect(breaker.state).toBe('closed');
    breaker.tryAcquire()?.failure();
    expect(breaker.state).toBe('open');
    early?.success(); // issued while closed, reported while open: ignored
    expect(breaker.state).toBe('open');
  });

  it('opens on a failure ratio once the window holds the minimum calls', async () => {
    const clock = createManualClock();
    const breaker = createCircuitBreaker({
      clock,
      trip: { failureRatio: 0.5, minimumCalls: 4, windowMs: 1_000 },
    });
    fail(breaker, 3);
    expect(breaker.state).toBe('closed'); // 3 calls < 4
    await clock.advance(1_000); // those three leave the window
    breaker.tryAcquire()?.success();
    breaker.tryAcquire()?.success();
    fail(breaker, 1);
    expect(breaker.state).toBe('closed'); // 1 / 3
    fail(breaker, 1);
    expect(breaker.state).toBe('open'); // 2 / 4
  });

  it('resets the ratio window when it closes again', async () => {
    const clock = createManualClock();
    const breaker = createCircuitBreaker({
      clock,
      openMs: 10,
      trip: { failureRatio: 0.5, minimumCalls: 2, windowMs: 60_000 },
    });
    fail(breaker, 2);
    await clock.advance(10);
    breaker.tryAcquire()?.success();
    expect(breaker.state).toBe('closed');
    fail(breaker, 1);
    expect(breaker.state).toBe('closed'); // 1 call in the fresh window
  });

  it('stops notifying a disposed listener', () => {
    const clock = createManualClock();
    const seen: string[] = [];
    const breaker = createCircuitBreaker({ clock, trip: { consecutiveFailures: 1 } });
    const dispose = breaker.onStateChange((c) => seen.push(c.to));
    dispose();
    fail(breaker, 1);
    expect(seen).toEqual([]);
  });

  it.each<[string, CircuitTrip]>([
    ['zero failures', { consecutiveFailures: 0 }],
    ['a ratio above 1', { failureRatio: 1.2 }],
    ['a zero ratio', { failureRatio: 0 }],
    ['both rules', { consecutiveFailures: 3, failureRatio: 0.5 } as unknown as CircuitTrip],
    ['neither rule', {} as unknown as CircuitTrip],
  ])('rejects %s at construction', (_label, trip) => {
    expect(() => createCircuitBreaker({ trip })).toThrow(ConfigurationError);
  });

  it('rejects a non-positive open time', () => {
    expect(() => createCircuitBreaker({ openMs: 0 })).toThrow(ConfigurationError);
  });

  it('tells instances from options', () => {
    expect(isCircuitBreaker(createCircuitBreaker())).toBe(true);
    expect(isCircuitBreaker({ openMs: 5 })).toBe(false);
  });
});
