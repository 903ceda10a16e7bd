import { CircuitOpenError } from './errors';
import { markNonRetriable } from './marks';
import { errorOf, harness, reset, settle } from './test-helpers';
describe('retryPolicy().execute with a circuit breaker', () => {
  it('opens after repeated failures, then refuses calls without running them', async () => {
    const h = harness({
      circuitBreaker: { trip: { consecutiveFailures: 2 }, openMs: 5_000 },
      maxAttempts: 5,
    });
    const first = await settle(
      h.clock,
      h.policy.execute(
        h.timed(({ attempt }) => {
          throw reset(attempt);
        }),
      ),
    );
    // Attempt 2 (at 50 ms) opens the breaker for 5 s: longer than the next backoff, so the
    // policy refuses now instead of sleeping into a closed door.
    const opened = errorOf(first) as CircuitOpenError;
    expect(opened).toBeInstanceOf(CircuitOpenError);
    expect(opened.cause).toMatchObject({ message: 'reset 2' });
    expect(opened.retryAfterMs).toBe(5_000);
    expect(h.starts).toEqual([0, 50]);
    expect(h.giveUps[0]?.reason).toBe('circuit-open');

    await h.clock.advance(4_999);
    const refused = await settle(h.clock, h.policy.execute(h.timed(() => 'unreached')));
    expect(errorOf(refused)).toBeInstanceOf(CircuitOpenError);
    expect((errorOf(refused) as CircuitOpenError).retryAfterMs).toBe(1);
    expect((errorOf(refused) as Error).cause).toBeUndefined();
    expect(h.starts).toHaveLength(2);

    await h.clock.advance(1);
    const probe = await settle(
      h.clock,
      h.policy.execute(() => 'healthy'),
    );
    expect(probe).toEqual({ ok: true, value: 'healthy' });
    expect(h.policy.circuitBreaker?.state).toBe('closed');
  });

  it('counts non-retriable errors as the dependency answering', async () => {
    const h = harness({ circuitBreaker: { trip: { consecutiveFailures: 1 } } });
    const bad = markNonRetriable(new Error('400'));
    await settle(
      h.clock,
      h.policy.execute(() => {
        throw bad;
      }),
    );
    expect(h.policy.circuitBreaker?.state).toBe('closed');
  });

  it('retries through a breaker that reopens only after the backoff', async () => {
    const h = harness({
      circuitBreaker: { trip: { consecutiveFailures: 1 }, openMs: 40 },
      random: () => 0.5,
    });
    const fn = h.timed(({ attempt }) => {
      if (attempt === 1) throw reset(1);
      return 'probe passed';
    });
    const outcome = await settle(h.clock, h.policy.execute(fn));
    // Breaker opens at 0 for 40 ms; the 50 ms backoff outlasts it, so attempt 2 is the probe.
    expect(outcome).toEqual({ ok: true, value: 'probe passed' });
    expect(h.starts).toEqual([0, 50]);
    expect(h.policy.circuitBreaker?.state).toBe('closed');
  });
});
