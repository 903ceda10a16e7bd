import {
  AttemptTimeoutError,
  RetryAttemptsExhaustedError,
  RetryBudgetExhaustedError,
  RetryDeadlineExceededError,
  RetryQuotaExhaustedError,
} from './errors';
import type { AttemptContext } from './execute';
import { markNonRetriable } from './marks';
import { createManualClock } from './manual-clock';
import { createRetryBudget } from './retry-budget';
import { createRetryQuota } from './retry-quota';
import { retryPolicy } from './retry-policy';
import { errorOf, harness, reset, sequence, settle } from './test-helpers';
describe('retryPolicy().execute', () => {
  it('retries transient failures after the jittered delays and returns the result', async () => {
    const h = harness({ random: sequence(0.5, 0.25), maxAttempts: 4 });
    const fn = h.timed(({ attempt }) => {
      if (attempt < 3) throw reset(attempt);
      return `ok on ${attempt}`;
    });
    const outcome = await settle(h.clock, h.policy.execute(fn));
    expect(outcome).toEqual({ ok: true, value: 'ok on 3' });
    // Delay after attempt 1: 100 * 0.5 = 50; after attempt 2: 200 * 0.25 = 50.
    expect(h.starts).toEqual([0, 50, 100]);
    expect(h.retries.map((r) => [r.attempt, r.delayMs, r.errorClass])).toEqual([
      [1, 50, 'transient'],
      [2, 50, 'transient'],
    ]);
    expect(h.giveUps).toEqual([]);
  });

  it('throws RetryAttemptsExhaustedError with the last error as cause', async () => {
    const h = harness();
    const outcome = await settle(
      h.clock,
      h.policy.execute(
        h.timed(({ attempt }) => {
          throw reset(attempt);
        }),
      ),
    );
    const error = errorOf(outcome);
    expect(error).toBeInstanceOf(RetryAttemptsExhaustedError);
    expect((error as RetryAttemptsExhaustedError).attempts).toBe(3);
    expect((error as Error).cause).toMatchObject({ message: 'reset 3' });
    expect(h.starts).toEqual([0, 50, 150]);
    expect(h.giveUps).toEqual([
      { attempts: 3, reason: 'attempts-exhausted', error, elapsedMs: 150 },
    ]);
  });

  it('rethrows a non-retriable error unchanged after one attempt', async () => {
    const h = harness();
    const bad = markNonRetriable(new Error('invalid'));
    const outcome = await settle(
      h.clock,
      h.policy.execute(
        h.timed(async () => {
          throw bad;
        }),
      ),
    );
    expect(errorOf(outcome)).toBe(bad);
    expect(h.starts).toEqual([0]);
    expect(h.giveUps[0]?.reason).toBe('non-retriable');
  });

  it('waits from the throttling base for throttling errors', async () => {
    const h = harness();
    const fn = h.timed(({ attempt }) => {
      if (attempt === 1) throw Object.assign(new Error('429'), { statusCode: 429 });
      return 'done';
    });
    await settle(h.clock, h.policy.execute(fn));
    expect(h.starts).toEqual([0, 250]);
  });

  it('aborts a slow attempt at attemptTimeoutMs and retries it', async () => {
    const h = harness({ attemptTimeoutMs: 1_000 });
    const reasons: unknown[] = [];
    const fn = h.timed((context: AttemptContext) => {
      if (context.attempt === 2) return 'second time lucky';
      context.signal.addEventListener('abort', () => reasons.push(context.signal.reason));
      return h.hang(context);
    });
    const outcome = await settle(h.clock, h.policy.execute(fn));
    expect(outcome).toEqual({ ok: true, value: 'second time lucky' });
    expect(h.starts).toEqual([0, 1_050]);
    expect(reasons).toHaveLength(1);
    expect(reasons[0]).toBeInstanceOf(AttemptTimeoutError);
    expect(h.retries[0]?.error).toBe(reasons[0]);
  });

  it('times out an attempt that ignores its signal, and reports the timeout as the cause', async () => {
    const h = harness({ attemptTimeoutMs: 200, maxAttempts: 2 });
    const never = new Promise<string>(() => undefined);
    const outcome = await settle(h.clock, h.policy.execute(h.timed(() => never)));
    const error = errorOf(outcome) as RetryAttemptsExhaustedError;
    expect(error).toBeInstanceOf(RetryAttemptsExhaustedError);
    expect(error.cause).toBeInstanceOf(AttemptTimeoutError);
    expect((error.cause as AttemptTimeoutError).attempt).toBe(2);
    expect(h.starts).toEqual([0, 250]);
    expect(h.clock.pendingTimers).toBe(0);
  });

  it('charges timeout retries 10 tokens and refunds the last retry on success', async () => {
    const quota = createRetryQuota();
    const h = harness({ attemptTimeoutMs: 100, maxAttempts: 4, quota });
    const fn = h.timed((context: AttemptContext) => {
      if (context.attempt === 1) return h.hang(context); // timeout: costs 10
      if (context.attempt === 2) throw reset(2); // ordinary: costs 5
      return 'ok';
    });
    const run = h.policy.execute(fn);
    await h.clock.advance(100); // attempt 1 times out
    expect(quota.available).toBe(490);
    const outcome = await settle(h.clock, run);
    expect(outcome.ok).toBe(true);
    // 500 - 10 - 5, then the successful retry gives its 5 back.
    expect(quota.available).toBe(490);
  });

  it('adds one token for a first-attempt success, up to the capacity', async () => {
    const quota = createRetryQuota();
    quota.tryAcquire('other');
    const h = harness({ quota });
    await settle(
      h.clock,
      h.policy.execute(() => 'fine'),
    );
    expect(quota.available).toBe(496);
  });

  it('stops with RetryQuotaExhaustedError when the bucket is dry', async () => {
    const quota = createRetryQuota({ capacity: 10 });
    const h = harness({ quota, maxAttempts: 10 });
    const outcome = await settle(
      h.clock,
      h.policy.execute(
        h.timed(({ attempt }) => {
          throw reset(attempt);
        }),
      ),
    );
    const error = errorOf(outcome) as RetryQuotaExhaustedError;
    expect(error).toBeInstanceOf(RetryQuotaExhaustedError);
    expect(error.cause).toMatchObject({ message: 'reset 3' });
    expect(error.available).toBe(0);
    expect(h.starts).toHaveLength(3);
    expect(h.giveUps[0]?.reason).toBe('quota-exhausted');
  });

  it('stops with RetryBudgetExhaustedError and returns the quota tokens it took', async () => {
    const budgetClock = createManualClock();
    const quota = createRetryQuota();
    const budget = createRetryBudget({ clock: budgetClock, ratio: 0, minRetriesPerSecond: 0.1 }); // 1 retry per 10 s
    const h = harness({ quota, budget, maxAttempts: 10 });
    const outcome = await settle(
      h.clock,
      h.policy.execute(
        h.timed(({ attempt }) => {
          throw reset(attempt);
        }),
      ),
    );
    const error = errorOf(outcome);
    expect(error).toBeInstanceOf(RetryBudgetExhaustedError);
    expect((error as Error).cause).toMatchObject({ message: 'reset 2' });
    expect(h.starts).toHaveLength(2);
    expect(quota.available).toBe(495);
  });

  it('counts a success in the budget', async () => {
    const clock = createManualClock();
    const budget = createRetryBudget({ clock, ratio: 0.5, minRetriesPerSecond: 0 });
    const policy = retryPolicy({ clock, budget });
    await settle(
      clock,
      policy.execute(() => 1),
    );
    await settle(
      clock,
      policy.execute(() => 2),
    );
    expect(budget.available()).toBe(1);
  });

  it('gives up when the next backoff would cross the deadline', async () => {
    const h = harness({ deadlineMs: 1_000, maxAttempts: 10, baseDelayMs: 400, random: () => 1 });
    const outcome = await settle(
      h.clock,
      h.policy.execute(
        h.timed(({ attempt }) => {
          throw reset(attempt);
        }),
      ),
    );
    const error = errorOf(outcome) as RetryDeadlineExceededError;
    expect(error).toBeInstanceOf(RetryDeadlineExceededError);
    expect(error.deadlineMs).toBe(1_000);
    expect(error.cause).toMatchObject({ message: 'reset 2' });
    // 400 after attempt 1; 800 after attempt 2 would end at 1 200 > 1 000.
    expect(h.starts).toEqual([0, 400]);
  });

  it('cuts an attempt short at the deadline when no attempt timeout is set', async () => {
    const h = harness({ deadlineMs: 700 });
    const outcome = await settle(h.clock, h.policy.execute(h.timed(h.hang)));
    const error = errorOf(outcome) as RetryDeadlineExceededError;
    expect(error).toBeInstanceOf(RetryDeadlineExceededError);
    expect(error.cause).toBeInstanceOf(AttemptTimeoutError);
    expect((error.cause as AttemptTimeoutError).timeoutMs).toBe(700);
    expect(h.clock.now()).toBe(700);
    expect(h.starts).toEqual([0]);
  });

  it('shortens the last attempt to what is left of the deadline', async () => {
    const h = harness({ deadlineMs: 1_000, attemptTimeoutMs: 600, random: () => 1 });
    const outcome = await settle(h.clock, h.policy.execute(h.timed(h.hang)));
    // Attempt 1 times out at 600, sleeps 100, attempt 2 gets the 300 ms left.
    const error = errorOf(outcome) as RetryDeadlineExceededError;
    expect(error).toBeInstanceOf(RetryDeadlineExceededError);
    expect((error.cause as AttemptTimeoutError).timeoutMs).toBe(300);
    expect(h.starts).toEqual([0, 700]);
    expect(h.clock.now()).toBe(1_000);
  });

  describe('listeners', () => {
    it('stop after dispose, and a throwing listener changes nothing', async () => {
      const h = harness();
      const seen: number[] = [];
      const dispose = h.policy.onRetry((event) => seen.push(event.attempt));
      h.policy.onRetry(() => {
        throw new Error('listener bug');
      });
      const fn = ({ attempt }: AttemptContext) => {
        if (attempt < 3) throw reset(attempt);
        return attempt;
      };
      const run = h.policy.execute(fn);
      await h.clock.advance(49); // attempt 1 failed; its 50 ms backoff is under way
      dispose();
      const outcome = await settle(h.clock, run);
      expect(outcome).toEqual({ ok: true, value: 3 });
      expect(seen).toEqual([1]);
      expect(h.retries.map((r) => r.attempt)).toEqual([1, 2]);
    });
  });

  it('handles an attempt that throws synchronously', async () => {
    const h = harness();
    const outcome = await settle(
      h.clock,
      h.policy.execute(({ attempt }) => {
        if (attempt === 1) throw reset(1);
        return 'sync ok';
      }),
    );
    expect(outcome).toEqual({ ok: true, value: 'sync ok' });
  });
});
