import { ConfigurationError } from '../errors';
import {
  durationOption,
  integerOption,
  optionalBoolean,
  optionalFunction,
  positiveIntegerOption,
} from './options';

/** The error `run` throws, for its message and details. */
function thrown(run: () => unknown): ConfigurationError {
  try {
    run();
  } catch (error) {
    if (error instanceof ConfigurationError) return error;
    throw error;
  }
  throw new Error('expected a ConfigurationError');
}

describe('option validators', () => {
  it('integerOption: the fallback when absent, the range inclusive, anything else refused by name', () => {
    expect(integerOption(undefined, 7, 'n', 1, 10)).toBe(7);
    expect(integerOption(1, 7, 'n', 1, 10)).toBe(1);
    expect(integerOption(10, 7, 'n', 1, 10)).toBe(10);
    for (const bad of [0, 11, 1.5, Number.NaN, '3', null]) {
      const error = thrown(() => integerOption(bad, 7, 'batchSize', 1, 10));
      expect(error.message).toBe('batchSize must be an integer from 1 to 10');
      expect(error.details).toEqual({ batchSize: bad });
    }
  });

  it('positiveIntegerOption: any safe integer from 1, nothing else', () => {
    expect(positiveIntegerOption(undefined, 'maxKeyLength', 255)).toBe(255);
    expect(positiveIntegerOption(1, 'maxKeyLength', 255)).toBe(1);
    expect(positiveIntegerOption(Number.MAX_SAFE_INTEGER, 'm', 1)).toBe(Number.MAX_SAFE_INTEGER);
    for (const bad of [0, -1, 2.5, Number.MAX_SAFE_INTEGER + 1, Infinity, '5', null]) {
      const error = thrown(() => positiveIntegerOption(bad, 'maxKeyLength', 255));
      expect(error.message).toBe('maxKeyLength must be a positive integer');
      expect(error.details).toEqual({ maxKeyLength: bad });
    }
  });

  it('durationOption, optionalFunction and optionalBoolean refuse the wrong kind of value', () => {
    expect(durationOption(undefined, 'leaseMs', 30_000, 1)).toBe(30_000);
    expect(durationOption(1.5, 'leaseMs', 30_000, 1)).toBe(1.5);
    expect(thrown(() => durationOption(Infinity, 'leaseMs', 1, 1)).message).toMatch(/leaseMs/);
    expect(thrown(() => durationOption(0, 'leaseMs', 1, 1)).message).toMatch(/at least 1/);
    const fn = (): void => undefined;
    expect(optionalFunction(fn, 'isRetryable')).toBe(fn);
    expect(optionalFunction(undefined, 'isRetryable')).toBeUndefined();
    expect(thrown(() => optionalFunction('x', 'isRetryable')).details).toEqual({
      isRetryable: 'string',
    });
    expect(optionalBoolean(undefined, true, 'notify')).toBe(true);
    expect(thrown(() => optionalBoolean('yes', true, 'notify')).message).toBe(
      'notify must be a boolean',
    );
  });
});
