import fc from 'fast-check';
import { ConfigurationError } from '../errors';
import { resolveResilience } from './options';
import type { ResilienceOptions } from './types';

/** Options of any shape, as a caller might pass them. */
const resolve = (options: unknown): ReturnType<typeof resolveResilience<unknown>> =>
  resolveResilience(options as ResilienceOptions<unknown>, 'createThing');

describe('resolveResilience', () => {
  it('turns both on with the documented defaults', () => {
    const resolved = resolve({});
    expect(resolved.budget).toEqual({
      ratio: 0.2,
      minRetriesPerSecond: 10,
      windowMs: 10_000,
      spentDelayMs: 30_000,
      whenSpent: 'delay',
    });
    expect(resolved.breaker).toMatchObject({
      trip: { consecutiveFailures: 5 },
      openMs: 30_000,
      maxKeys: 1_000,
    });
  });

  it('false turns a part off', () => {
    expect(resolve({ budget: false, breaker: false })).toMatchObject({
      budget: undefined,
      breaker: undefined,
    });
  });

  it('refuses unknown keys at every level, naming the path and the closest key', () => {
    expect(() => resolve({ bugdet: {} })).toThrow(
      'createThing: unknown option `resilience.bugdet`; did you mean `resilience.budget`?',
    );
    expect(() => resolve({ budget: { ratoi: 0.1 } })).toThrow('`resilience.budget.ratoi`');
    expect(() => resolve({ breaker: { openms: 1 } })).toThrow('`resilience.breaker.openMs`');
    expect(() => resolve({ breaker: { trip: { consecutiveFailures: 2, windowMs: 5 } } })).toThrow(
      '`resilience.breaker.trip.windowMs`',
    );
  });

  it('refuses what is not an options object', () => {
    for (const bad of [null, 3, 'x', []]) {
      expect(() => resolve(bad)).toThrow(ConfigurationError);
      expect(() => resolve({ budget: bad })).toThrow(ConfigurationError);
      expect(() => resolve({ breaker: bad })).toThrow(ConfigurationError);
    }
    expect(() => resolve({ breaker: { key: 'tenant' } })).toThrow('resilience.breaker.key');
    expect(() => resolve({ onEvent: 1 })).toThrow('resilience.onEvent');
  });

  it('property: numbers are accepted exactly inside their documented ranges', () => {
    const anyNumber = fc.oneof(
      fc.double({ noNaN: false }),
      fc.integer({ min: -5, max: 20_000 }),
      fc.constantFrom(Number.NaN, Infinity, -Infinity, -0),
    );
    fc.assert(
      fc.property(anyNumber, anyNumber, anyNumber, anyNumber, (ratio, window, spent, openMs) => {
        const valid =
          Number.isFinite(ratio) &&
          ratio >= 0 &&
          ratio <= 1 &&
          Number.isFinite(window) &&
          window >= 10 &&
          Number.isFinite(spent) &&
          spent >= 0 &&
          Number.isFinite(openMs) &&
          openMs >= 1;
        const run = () =>
          resolve({
            budget: { ratio, windowMs: window, spentDelayMs: spent },
            breaker: { openMs },
          });
        if (valid) expect(run).not.toThrow();
        else expect(run).toThrow(ConfigurationError);
      }),
      { numRuns: 300 },
    );
  });

  it('property: maxKeys and consecutiveFailures are positive integers', () => {
    fc.assert(
      fc.property(
        fc.oneof(fc.integer({ min: -3, max: 50 }), fc.double({ min: -10, max: 1e6 })),
        (n) => {
          const ok = Number.isInteger(n) && n >= 1;
          const keys = () => resolve({ breaker: { maxKeys: n } });
          const trip = () => resolve({ breaker: { trip: { consecutiveFailures: n } } });
          for (const run of [keys, trip]) {
            if (ok) expect(run).not.toThrow();
            else expect(run).toThrow(ConfigurationError);
          }
        },
      ),
    );
  });
});
