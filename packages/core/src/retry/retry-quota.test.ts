import { ConfigurationError } from '../errors';
import { RETRY_QUOTA_DEFAULTS, createRetryQuota, isRetryQuota } from './retry-quota';

describe('createRetryQuota', () => {
  it('defaults to the standard-mode numbers: 500 tokens, 5 per retry, 10 per timeout retry, 1 back per success', () => {
    expect(RETRY_QUOTA_DEFAULTS).toEqual({
      capacity: 500,
      retryCost: 5,
      timeoutRetryCost: 10,
      successIncrement: 1,
    });
    const quota = createRetryQuota();
    expect(quota.available).toBe(500);
    expect(quota.tryAcquire('other')).toBe(5);
    expect(quota.available).toBe(495);
    expect(quota.tryAcquire('timeout')).toBe(10);
    expect(quota.available).toBe(485);
    quota.recordSuccess();
    expect(quota.available).toBe(486);
  });

  it('refuses a retry the remaining tokens cannot pay for, without taking any', () => {
    const quota = createRetryQuota({ capacity: 12 });
    expect(quota.tryAcquire('other')).toBe(5);
    expect(quota.tryAcquire('timeout')).toBeUndefined();
    expect(quota.available).toBe(7);
    expect(quota.tryAcquire('other')).toBe(5);
    expect(quota.tryAcquire('other')).toBeUndefined();
    expect(quota.available).toBe(2);
  });

  it('a success after a retry gives back what that retry took', () => {
    const quota = createRetryQuota();
    const cost = quota.tryAcquire('timeout');
    expect(quota.available).toBe(490);
    quota.recordSuccess(cost);
    expect(quota.available).toBe(500);
  });

  it('never fills past its capacity', () => {
    const quota = createRetryQuota({ capacity: 20 });
    quota.recordSuccess();
    quota.release(50);
    expect(quota.available).toBe(20);
  });

  it('drains under sustained failure and recovers only through successes', () => {
    const quota = createRetryQuota();
    let retries = 0;
    while (quota.tryAcquire('other') !== undefined) retries++;
    expect(retries).toBe(100);
    expect(quota.available).toBe(0);
    for (let i = 0; i < 4; i++) quota.recordSuccess();
    expect(quota.tryAcquire('other')).toBeUndefined();
    quota.recordSuccess();
    expect(quota.tryAcquire('other')).toBe(5);
  });

  it.each([
    [{ capacity: 0 }],
    [{ capacity: 1.5 }],
    [{ retryCost: -1 }],
    [{ capacity: 10, timeoutRetryCost: 11 }],
    [{ successIncrement: Number.NaN }],
  ])('rejects %j at construction', (options) => {
    expect(() => createRetryQuota(options)).toThrow(ConfigurationError);
  });

  it('tells instances from options', () => {
    expect(isRetryQuota(createRetryQuota())).toBe(true);
    expect(isRetryQuota({ capacity: 5 })).toBe(false);
  });
});
