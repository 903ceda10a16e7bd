import { ConfigurationError } from '../errors';
import { createCircuitBreaker } from './circuit-breaker';
import { markNonRetriable } from './marks';
import { createManualClock } from './manual-clock';
import { createRetryBudget } from './retry-budget';
import { createRetryQuota } from './retry-quota';
import type { RetryPolicyOptions } from './retry-policy';
import { retryPolicy } from './retry-policy';
import { RETRY_POLICY_DEFAULTS } from './retry-settings';
import { sequence } from './test-helpers';

const transient = Object.assign(new Error('reset'), { code: 'ECONNRESET' });
const throttled = Object.assign(new Error('slow down'), { statusCode: 429 });

describe('retryPolicy().decide', () => {
  it('uses the standard-mode defaults: 3 attempts, 100 ms base, 500 ms throttling base, 20 s cap', () => {
    expect(RETRY_POLICY_DEFAULTS).toEqual({
      maxAttempts: 3,
      baseDelayMs: 100,
      throttlingBaseDelayMs: 500,
      maxDelayMs: 20_000,
      defaultErrorClass: 'transient',
    });
    const policy = retryPolicy({ random: () => 0.5 });
    expect(policy.decide({ attempt: 1, error: transient })).toEqual({
      retry: true,
      delayMs: 50,
      errorClass: 'transient',
    });
    expect(policy.decide({ attempt: 2, error: transient })).toEqual({
      retry: true,
      delayMs: 100,
      errorClass: 'transient',
    });
    expect(policy.decide({ attempt: 3, error: transient })).toEqual({
      retry: false,
      reason: 'attempts-exhausted',
      errorClass: 'transient',
    });
  });

  it('backs off from the larger base for throttling errors', () => {
    const policy = retryPolicy({ random: () => 0.5, maxAttempts: 5 });
    expect(policy.decide({ attempt: 1, error: throttled })).toEqual({
      retry: true,
      delayMs: 250,
      errorClass: 'throttling',
    });
    expect(policy.decide({ attempt: 3, error: throttled })).toMatchObject({ delayMs: 1_000 });
  });

  it('draws one random number per retry decision and caps the ceiling', () => {
    const policy = retryPolicy({
      random: sequence(0.1, 0.9, 0.25),
      maxAttempts: 20,
      maxDelayMs: 1_000,
    });
    const delays = [1, 2, 10].map((attempt) => {
      const decision = policy.decide({ attempt, error: transient });
      return decision.retry ? decision.delayMs : -1;
    });
    expect(delays).toEqual([10, 180, 250]);
  });

  it('gives up at once on non-retriable errors, whatever the attempt', () => {
    const policy = retryPolicy();
    expect(policy.decide({ attempt: 1, error: markNonRetriable(new Error('bad input')) })).toEqual({
      retry: false,
      reason: 'non-retriable',
      errorClass: 'non-retriable',
    });
    expect(policy.decide({ attempt: 1, error: { statusCode: 422 } })).toMatchObject({
      retry: false,
      reason: 'non-retriable',
    });
  });

  it('gives up when the backoff would reach the deadline', () => {
    const policy = retryPolicy({ random: () => 0.5, deadlineMs: 1_000, maxAttempts: 10 });
    expect(policy.decide({ attempt: 1, error: transient, elapsedMs: 949 })).toMatchObject({
      retry: true,
      delayMs: 50,
    });
    expect(policy.decide({ attempt: 1, error: transient, elapsedMs: 950 })).toEqual({
      retry: false,
      reason: 'deadline-exceeded',
      errorClass: 'transient',
    });
    // Without elapsedMs the deadline cannot be judged and is not applied.
    expect(policy.decide({ attempt: 1, error: transient })).toMatchObject({ retry: true });
  });

  it('honours the caller classifier and default class', () => {
    const policy = retryPolicy({
      random: () => 0.5,
      classify: (error) => (error === 'busy' ? 'throttling' : undefined),
      defaultErrorClass: 'non-retriable',
    });
    expect(policy.decide({ attempt: 1, error: 'busy' })).toMatchObject({
      retry: true,
      errorClass: 'throttling',
      delayMs: 250,
    });
    expect(policy.decide({ attempt: 1, error: new Error('?') })).toMatchObject({
      retry: false,
      reason: 'non-retriable',
    });
    expect(policy.classify(transient)).toBe('transient');
  });

  it('treats nonsense attempt numbers as the first attempt', () => {
    const policy = retryPolicy({ random: () => 0.5 });
    expect(policy.decide({ attempt: 0, error: transient })).toMatchObject({ delayMs: 50 });
    expect(policy.decide({ attempt: Number.NaN, error: transient })).toMatchObject({ delayMs: 50 });
  });

  it('does not touch the quota, budget or breaker', () => {
    const clock = createManualClock();
    const quota = createRetryQuota();
    const budget = createRetryBudget({ clock, minRetriesPerSecond: 0 });
    const breaker = createCircuitBreaker({ clock, trip: { consecutiveFailures: 1 } });
    const policy = retryPolicy({ clock, quota, budget, circuitBreaker: breaker });
    for (let i = 0; i < 3; i++) policy.decide({ attempt: 1, error: transient });
    expect(quota.available).toBe(500);
    expect(budget.available()).toBe(0);
    expect(breaker.state).toBe('closed');
  });
});

describe('retryPolicy().backoffMs', () => {
  it('answers "how long before redelivery attempt n + 1"', () => {
    const policy = retryPolicy({ random: () => 0.75 });
    expect(policy.backoffMs(1)).toBe(75);
    expect(policy.backoffMs(4)).toBe(600);
    expect(policy.backoffMs(2, 'throttling')).toBe(750);
    expect(policy.backoffMs(30)).toBe(15_000);
  });

  it('with dangerouslyDisableJitter sleeps the full ceiling', () => {
    const policy = retryPolicy({ dangerouslyDisableJitter: true, random: () => 0 });
    expect([1, 2, 3].map((n) => policy.backoffMs(n))).toEqual([100, 200, 400]);
  });
});

describe('retryPolicy() construction', () => {
  it('exposes frozen settings and the parts it uses', () => {
    const policy = retryPolicy({ deadlineMs: 5_000, attemptTimeoutMs: 1_000 });
    expect(policy.settings).toEqual({
      maxAttempts: 3,
      baseDelayMs: 100,
      throttlingBaseDelayMs: 500,
      maxDelayMs: 20_000,
      deadlineMs: 5_000,
      attemptTimeoutMs: 1_000,
      defaultErrorClass: 'transient',
      dangerouslyDisableJitter: false,
    });
    expect(Object.isFrozen(policy.settings)).toBe(true);
    expect(Object.isFrozen(policy)).toBe(true);
    expect(policy.quota?.available).toBe(500);
    expect(policy.budget).toBeUndefined();
    expect(policy.circuitBreaker).toBeUndefined();
  });

  it('builds private parts from options and leaves them out on false', () => {
    const policy = retryPolicy({
      quota: false,
      budget: { ratio: 0.5 },
      circuitBreaker: { openMs: 10 },
    });
    expect(policy.quota).toBeUndefined();
    expect(policy.budget?.available()).toBe(100);
    expect(policy.circuitBreaker?.state).toBe('closed');
  });

  it('with() returns a new policy sharing the stateful parts', () => {
    const quota = createRetryQuota();
    const base = retryPolicy({ quota, budget: {}, maxAttempts: 2, random: () => 0.5 });
    const patient = base.with({ maxAttempts: 6 });
    expect(patient).not.toBe(base);
    expect(base.settings.maxAttempts).toBe(2);
    expect(patient.settings.maxAttempts).toBe(6);
    expect(patient.quota).toBe(quota);
    expect(patient.budget).toBe(base.budget);
    expect(patient.backoffMs(1)).toBe(50);
    expect(base.with({ quota: false }).quota).toBeUndefined();
  });

  it.each<[string, RetryPolicyOptions]>([
    ['zero attempts', { maxAttempts: 0 }],
    ['fractional attempts', { maxAttempts: 2.5 }],
    ['unbounded attempts without a deadline', { maxAttempts: Infinity }],
    ['a negative base delay', { baseDelayMs: -1 }],
    ['a NaN cap', { maxDelayMs: Number.NaN }],
    ['a zero deadline', { deadlineMs: 0 }],
    ['a zero attempt timeout', { attemptTimeoutMs: 0 }],
    ['an attempt timeout equal to the deadline', { deadlineMs: 1_000, attemptTimeoutMs: 1_000 }],
    ['an attempt timeout above the deadline', { deadlineMs: 1_000, attemptTimeoutMs: 2_000 }],
    ['an unknown default class', { defaultErrorClass: 'maybe' as never }],
    ['a classifier that is not a function', { classify: 'yes' as never }],
    ['a random that is not a function', { random: 0.5 as never }],
    ['bad quota options', { quota: { capacity: -1 } }],
    ['bad budget options', { budget: { ratio: 2 } }],
    ['bad breaker options', { circuitBreaker: { openMs: -5 } }],
  ])('rejects %s with a ConfigurationError', (_label, options) => {
    expect(() => retryPolicy(options)).toThrow(ConfigurationError);
  });

  it('names the offending option', () => {
    let caught: unknown;
    try {
      retryPolicy({ deadlineMs: 1_000, attemptTimeoutMs: 1_500 });
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(ConfigurationError);
    expect((caught as ConfigurationError).details).toMatchObject({
      option: 'attemptTimeoutMs',
      attemptTimeoutMs: 1_500,
      deadlineMs: 1_000,
    });
  });

  it('allows unbounded attempts when a deadline bounds them', () => {
    expect(retryPolicy({ maxAttempts: Infinity, deadlineMs: 1_000 }).settings.maxAttempts).toBe(
      Infinity,
    );
  });
});
