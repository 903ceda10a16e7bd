/**
 * `pnpm crash-matrix`'s command line (test-support/crash-matrix/arguments.ts): every count in
 * range is taken as given, anything else is a usage error naming the flag, and so is an
 * unknown flag; nothing runs on a bad command line.
 */
import fc from 'fast-check';
import {
  MatrixUsageError,
  parseMatrixArguments,
} from '../../../test-support/crash-matrix/arguments';

const FLAGS = ['size', 'kills', 'concurrency'] as const;
const MOST = { size: 100_000, kills: 1_000, concurrency: 64 } as const;

describe('pnpm crash-matrix arguments', () => {
  it('defaults: 20 messages, 2 kills, 4 at a time, the whole matrix written', () => {
    expect(parseMatrixArguments([])).toEqual({
      size: 20,
      kills: 2,
      concurrency: 4,
      only: undefined,
      write: true,
    });
  });

  it('takes every count in range as given', () => {
    fc.assert(
      fc.property(
        fc
          .constantFrom(...FLAGS)
          .chain((flag) => fc.tuple(fc.constant(flag), fc.integer({ min: 1, max: MOST[flag] }))),
        ([flag, n]) => {
          expect(parseMatrixArguments([`--${flag}`, String(n)])[flag]).toBe(n);
        },
      ),
    );
  });

  it('refuses any other count with a usage error naming the flag', () => {
    const notACount = fc.oneof(
      fc.string(),
      fc.integer({ max: 0 }).map(String),
      fc.integer({ min: 100_001 }).map(String),
      fc.double().map(String),
    );
    fc.assert(
      fc.property(fc.constantFrom(...FLAGS), notACount, (flag, raw) => {
        fc.pre(!/^[0-9]+$/.test(raw) || Number(raw) < 1 || Number(raw) > MOST[flag]);
        expect(() => parseMatrixArguments([`--${flag}=${raw}`])).toThrow(MatrixUsageError);
        expect(() => parseMatrixArguments([`--${flag}=${raw}`])).toThrow(`--${flag}`);
      }),
    );
  });

  it('refuses unknown flags and positional arguments', () => {
    expect(() => parseMatrixArguments(['--sizes', '5'])).toThrow(MatrixUsageError);
    expect(() => parseMatrixArguments(['kafka'])).toThrow(MatrixUsageError);
  });

  it('writes docs/crash-matrix.md only for the whole matrix', () => {
    expect(parseMatrixArguments(['--only', 'kafka']).write).toBe(false);
    expect(parseMatrixArguments(['--no-write']).write).toBe(false);
  });
});
