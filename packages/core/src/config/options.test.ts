import fc from 'fast-check';
import { ConfigurationError } from '../errors';
import {
  closestOption,
  durationOption,
  integerOption,
  optionKeys,
  optionalBoolean,
  optionalFunction,
  positiveIntegerOption,
  rejectUnknownOptions,
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
    expect(integerOption(undefined, 'n', 7, 1, 10)).toBe(7);
    expect(integerOption(1, 'n', 7, 1, 10)).toBe(1);
    expect(integerOption(10, 'n', 7, 1, 10)).toBe(10);
    for (const bad of [0, 11, 1.5, Number.NaN, '3', null]) {
      const error = thrown(() => integerOption(bad, 'batchSize', 7, 1, 10));
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
    expect(optionalFunction(fn, 'isRetriable')).toBe(fn);
    expect(optionalFunction(undefined, 'isRetriable')).toBeUndefined();
    expect(thrown(() => optionalFunction('x', 'isRetriable')).details).toEqual({
      isRetriable: 'string',
    });
    expect(optionalBoolean(undefined, 'notify', true)).toBe(true);
    expect(thrown(() => optionalBoolean('yes', 'notify', true)).message).toBe(
      'notify must be a boolean',
    );
  });
});

interface Sample {
  readonly batchSize?: number;
  readonly maxAttempts?: number;
  readonly leaseMs?: number;
  readonly notify?: boolean;
  readonly connectionString?: string;
  readonly backoff?: { readonly baseMs?: number; readonly capMs?: number };
}
const SAMPLE_KEYS = optionKeys<Sample>()([
  'batchSize',
  'maxAttempts',
  'leaseMs',
  'notify',
  'connectionString',
  'backoff',
]);

describe('optionKeys', () => {
  it('returns the list as given', () => {
    expect(optionKeys<{ a?: number; b?: string }>()(['a', 'b'])).toEqual(['a', 'b']);
  });

  it('does not compile when the list misses a key of the interface, or names another', () => {
    // The checks are at compile time (`pnpm typecheck`); these lines only run as no-ops.
    // @ts-expect-error -- `b` is left out of the list
    optionKeys<{ a?: number; b?: string }>()(['a']);
    // @ts-expect-error -- `c` is not a key of the interface
    optionKeys<{ a?: number; b?: string }>()(['a', 'b', 'c']);
  });
});

describe('closestOption', () => {
  it.each([
    ['batchsize', 'batchSize'],
    ['maxAttempt', 'maxAttempts'],
    ['leaseMS', 'leaseMs'],
    ['notfiy', 'notify'],
    ['connectionstring', 'connectionString'],
  ])('suggests the known key closest to %s, without regard to case', (key, expected) => {
    expect(closestOption(key, SAMPLE_KEYS)).toBe(expected);
  });

  it('suggests nothing when no known key is close', () => {
    expect(closestOption('timeout', SAMPLE_KEYS)).toBeUndefined();
    expect(closestOption('x', SAMPLE_KEYS)).toBeUndefined();
    expect(closestOption('batchSize', [])).toBeUndefined();
  });
});

describe('rejectUnknownOptions', () => {
  it('names the unknown key and the closest known one', () => {
    const error = thrown(() => rejectUnknownOptions({ batchsize: 10 }, SAMPLE_KEYS, 'createRelay'));
    expect(error.code).toBe('INVALID_CONFIG');
    expect(error.message).toBe(
      'createRelay: unknown option `batchsize`; did you mean `batchSize`?',
    );
    expect(error.details).toEqual({
      unknown: ['batchsize'],
      didYouMean: { batchsize: 'batchSize' },
    });
  });

  it('makes no suggestion when nothing is close', () => {
    const error = thrown(() => rejectUnknownOptions({ timeout: 1 }, SAMPLE_KEYS, 'createRelay'));
    expect(error.message).toBe('createRelay: unknown option `timeout`');
    expect(error.details).toEqual({ unknown: ['timeout'], didYouMean: {} });
  });

  it('gives the path of a nested object', () => {
    const error = thrown(() =>
      rejectUnknownOptions({ basems: 1 }, ['baseMs', 'capMs'], 'createRelay', 'backoff'),
    );
    expect(error.message).toBe(
      'createRelay: unknown option `backoff.basems`; did you mean `backoff.baseMs`?',
    );
  });

  it('names every unknown key at once', () => {
    const error = thrown(() =>
      rejectUnknownOptions({ leaseMS: 1, notfiy: true, zzz: 1 }, SAMPLE_KEYS, 'createRelay'),
    );
    expect(error.message).toBe(
      'createRelay: unknown options `leaseMS` (did you mean `leaseMs`?), `notfiy` (did you mean `notify`?), `zzz`',
    );
    expect(error.details.unknown).toEqual(['leaseMS', 'notfiy', 'zzz']);
  });

  it('counts a key as given even when its value is undefined', () => {
    expect(() => rejectUnknownOptions({ batchsize: undefined }, SAMPLE_KEYS, 'f')).toThrow(
      ConfigurationError,
    );
  });

  it('refuses anything but an object at the top, and leaves a nested one to the caller', () => {
    for (const value of [undefined, null, 5, 'batchsize', [1, 2], () => undefined]) {
      const error = thrown(() => rejectUnknownOptions(value, SAMPLE_KEYS, 'createRelay'));
      expect(error.message).toBe('createRelay takes an options object');
      expect(() => rejectUnknownOptions(value, SAMPLE_KEYS, 'f', 'backoff')).not.toThrow();
    }
  });

  it('treats a key named like an Object.prototype member as unknown, and keeps it a plain entry', () => {
    const options = JSON.parse('{"__proto__": 1, "toString": 2}') as object;
    const error = thrown(() => rejectUnknownOptions(options, SAMPLE_KEYS, 'f'));
    expect(error.details.unknown).toEqual(['__proto__', 'toString']);
    expect(Object.getPrototypeOf(error.details.didYouMean)).toBe(Object.prototype);
  });

  it('accepts any object whose keys are all known (property)', () => {
    fc.assert(
      fc.property(
        fc.subarray([...SAMPLE_KEYS]),
        fc.array(fc.anything(), { minLength: SAMPLE_KEYS.length, maxLength: SAMPLE_KEYS.length }),
        (keys, values) => {
          const options = Object.fromEntries(keys.map((key, i) => [key, values[i]]));
          rejectUnknownOptions(options, SAMPLE_KEYS, 'f');
        },
      ),
    );
  });

  it('refuses any key not in the list, naming exactly that key (property)', () => {
    fc.assert(
      fc.property(
        fc.subarray([...SAMPLE_KEYS]),
        fc.string().filter((key) => !(SAMPLE_KEYS as readonly string[]).includes(key)),
        (keys, extra) => {
          const options = Object.fromEntries([...keys.map((key) => [key, 1]), [extra, 1]]);
          const error = thrown(() => rejectUnknownOptions(options, SAMPLE_KEYS, 'f'));
          expect(error.details.unknown).toEqual([extra]);
          expect(error.message.startsWith(`f: unknown option \`${extra}\``)).toBe(true);
          const didYouMean = error.details.didYouMean as Record<string, string>;
          if (Object.hasOwn(didYouMean, extra)) expect(SAMPLE_KEYS).toContain(didYouMean[extra]);
        },
      ),
    );
  });
});
