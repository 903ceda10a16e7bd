import { createCircuitBreaker } from './circuit-breaker';
import { createManualClock } from './manual-clock';
import { retryPolicy } from './retry-policy';
import { errorOf, harness, reset, settle } from './test-helpers';
describe('retryPolicy().execute: cancellation', () => {
  it('stops during the backoff sleep with the caller’s reason', async () => {
    const h = harness();
    const controller = new AbortController();
    const run = h.policy.execute(
      h.timed(({ attempt }) => {
        throw reset(attempt);
      }),
      { signal: controller.signal },
    );
    await h.clock.advance(10);
    const reason = new Error('shutting down');
    controller.abort(reason);
    const outcome = await settle(h.clock, run);
    expect(errorOf(outcome)).toBe(reason);
    expect(h.starts).toEqual([0]);
    expect(h.giveUps[0]?.reason).toBe('aborted');
  });

  it('aborts the running attempt’s signal with the caller’s reason', async () => {
    const h = harness({ attemptTimeoutMs: 1_000 });
    const controller = new AbortController();
    let attemptSignal: AbortSignal | undefined;
    const run = h.policy.execute(
      (context) => {
        attemptSignal = context.signal;
        return h.hang(context);
      },
      { signal: controller.signal },
    );
    await h.clock.advance(100);
    const reason = new Error('stop');
    controller.abort(reason);
    const outcome = await settle(h.clock, run);
    expect(errorOf(outcome)).toBe(reason);
    expect(attemptSignal?.reason).toBe(reason);
    expect(h.clock.now()).toBe(100);
    expect(h.clock.pendingTimers).toBe(0);
  });

  it('does not start when the signal is already aborted', async () => {
    const h = harness();
    const reason = new Error('too late');
    const outcome = await settle(
      h.clock,
      h.policy.execute(
        h.timed(() => 'x'),
        { signal: AbortSignal.abort(reason) },
      ),
    );
    expect(errorOf(outcome)).toBe(reason);
    expect(h.starts).toEqual([]);
  });

  it('releases the half-open probe when the caller aborts it', async () => {
    const clock = createManualClock();
    const breaker = createCircuitBreaker({ clock, trip: { consecutiveFailures: 1 }, openMs: 10 });
    breaker.tryAcquire()?.failure();
    await clock.advance(10);
    const policy = retryPolicy({ clock, circuitBreaker: breaker });
    const controller = new AbortController();
    const run = policy.execute(
      (context) =>
        new Promise((_resolve, reject) =>
          context.signal.addEventListener('abort', () => reject(context.signal.reason)),
        ),
      { signal: controller.signal },
    );
    await clock.advance(1);
    expect(breaker.state).toBe('half-open');
    controller.abort(new Error('bye'));
    await settle(clock, run);
    expect(breaker.state).toBe('half-open');
    expect(breaker.tryAcquire()).toBeDefined();
  });
});
