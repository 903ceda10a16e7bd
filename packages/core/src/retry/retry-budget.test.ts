import { ConfigurationError } from '../errors';
import { createManualClock } from './manual-clock';
import { RETRY_BUDGET_DEFAULTS, createRetryBudget, isRetryBudget } from './retry-budget';

describe('createRetryBudget', () => {
  it('defaults to 20 % of successes plus 10 retries per second over 10 s', () => {
    expect(RETRY_BUDGET_DEFAULTS).toEqual({
      ratio: 0.2,
      minRetriesPerSecond: 10,
      windowMs: 10_000,
    });
    const clock = createManualClock();
    const budget = createRetryBudget({ clock });
    expect(budget.available()).toBe(100);
    for (let i = 0; i < 50; i++) budget.recordSuccess();
    expect(budget.available()).toBe(110);
  });

  it('allows retries as a fraction of successful calls', () => {
    const clock = createManualClock();
    const budget = createRetryBudget({ clock, ratio: 0.2, minRetriesPerSecond: 0 });
    expect(budget.tryWithdraw()).toBe(false);
    for (let i = 0; i < 14; i++) budget.recordSuccess();
    expect(budget.available()).toBe(2);
    expect(budget.tryWithdraw()).toBe(true);
    expect(budget.tryWithdraw()).toBe(true);
    expect(budget.tryWithdraw()).toBe(false);
    budget.recordSuccess();
    expect(budget.available()).toBe(1);
  });

  it('counts only the sliding window: old successes and old retries both expire', async () => {
    const clock = createManualClock();
    const budget = createRetryBudget({
      clock,
      ratio: 0.5,
      minRetriesPerSecond: 0,
      windowMs: 1_000,
    });
    for (let i = 0; i < 4; i++) budget.recordSuccess(); // slice 0 (t = 0)
    await clock.advance(500);
    for (let i = 0; i < 2; i++) budget.recordSuccess(); // slice 5 (t = 500)
    expect(budget.tryWithdraw()).toBe(true); // 3 earned, 1 spent
    expect(budget.available()).toBe(2);
    await clock.advance(599); // t = 1099: slice 0 has left the window
    expect(budget.available()).toBe(0); // 1 earned, 1 spent
    await clock.advance(401); // t = 1500: everything has left the window
    expect(budget.available()).toBe(0);
    budget.recordSuccess();
    budget.recordSuccess();
    expect(budget.available()).toBe(1);
  });

  it('keeps a floor of retries per second for quiet services', () => {
    const clock = createManualClock();
    const budget = createRetryBudget({
      clock,
      ratio: 0,
      minRetriesPerSecond: 0.5,
      windowMs: 4_000,
    });
    expect(budget.tryWithdraw()).toBe(true);
    expect(budget.tryWithdraw()).toBe(true);
    expect(budget.tryWithdraw()).toBe(false);
  });

  it('does not lose a retry to floating-point error', () => {
    const clock = createManualClock();
    const budget = createRetryBudget({ clock, ratio: 0.1, minRetriesPerSecond: 0 });
    for (let i = 0; i < 30; i++) budget.recordSuccess();
    expect(budget.available()).toBe(3);
  });

  it.each([[{ ratio: 1.5 }], [{ ratio: -0.1 }], [{ minRetriesPerSecond: -1 }], [{ windowMs: 5 }]])(
    'rejects %j at construction',
    (options) => {
      expect(() => createRetryBudget(options)).toThrow(ConfigurationError);
    },
  );

  it('tells instances from options', () => {
    expect(isRetryBudget(createRetryBudget())).toBe(true);
    expect(isRetryBudget({ ratio: 0.1 })).toBe(false);
  });
});
