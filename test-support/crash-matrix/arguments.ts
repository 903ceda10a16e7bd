/**
 * The command line of `pnpm crash-matrix`, checked before anything runs: an unknown flag, or
 * a count that is not a positive integer, is a {@link MatrixUsageError} naming the flag.
 */
import { parseArgs } from 'node:util';

/** What `pnpm crash-matrix` was asked. */
export interface MatrixArguments {
  /** Messages per cell (`--size`, default 20). */
  readonly size: number;
  /** Kills per cell (`--kills`, default 2). */
  readonly kills: number;
  /** Cells running at once (`--concurrency`, default 4). */
  readonly concurrency: number;
  /** Only the cells whose name contains this (`--only`). */
  readonly only: string | undefined;
  /** Write docs/crash-matrix.md (not with `--no-write`, nor for a part of the matrix). */
  readonly write: boolean;
}

export const MATRIX_USAGE =
  'usage: pnpm crash-matrix [--size N] [--kills K] [--only <text>] [--concurrency C] [--no-write]';

/** A bad command line; its message ends with the usage. */
export class MatrixUsageError extends Error {
  constructor(problem: string) {
    super(`${problem}\n${MATRIX_USAGE}`);
    this.name = 'MatrixUsageError';
  }
}

/** Most of each count: a run beyond these is a typo, not a long run. */
const LIMITS = { size: 100_000, kills: 1_000, concurrency: 64 } as const;

function count(name: keyof typeof LIMITS, raw: string | undefined, fallback: number): number {
  if (raw === undefined) return fallback;
  const value = /^[0-9]+$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isSafeInteger(value) || value < 1 || value > LIMITS[name]) {
    throw new MatrixUsageError(
      `--${name} must be an integer from 1 to ${LIMITS[name]}, got ${JSON.stringify(raw)}`,
    );
  }
  return value;
}

/** Parses the script's arguments (without `node` and the script's path). */
export function parseMatrixArguments(argv: readonly string[]): MatrixArguments {
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({
      args: [...argv],
      options: {
        size: { type: 'string' },
        kills: { type: 'string' },
        only: { type: 'string' },
        concurrency: { type: 'string' },
        'no-write': { type: 'boolean' },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (error) {
    throw new MatrixUsageError(error instanceof Error ? error.message : String(error));
  }
  const text = (name: string) => values[name] as string | undefined;
  const only = text('only');
  return {
    size: count('size', text('size'), 20),
    kills: count('kills', text('kills'), 2),
    concurrency: count('concurrency', text('concurrency'), 4),
    only,
    write: values['no-write'] !== true && only === undefined,
  };
}
