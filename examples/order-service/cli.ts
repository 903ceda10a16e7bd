import { hasErrorCode } from '@justonce/core';
/**
 * What the two command lines, `pnpm demo` (demo/main.ts) and `pnpm example:orders`
 * (run.ts), share: their arguments, the options both take, how counts are read, and how the
 * report is printed.
 */
import type { ParseArgsConfig } from 'node:util';
import type { FlowReport } from './report/checks';
import type { ProgressReporter } from './report/progress';
import { formatReport } from './report/table';

/** The options both command lines take, for `parseArgs`. */
export const FLOW_OPTIONS = {
  orders: { type: 'string', short: 'n' },
  seed: { type: 'string' },
  concurrency: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const satisfies ParseArgsConfig['options'];

/** The counts of {@link FLOW_OPTIONS} that were given. */
export interface FlowCounts {
  readonly orders?: number;
  readonly seed?: number;
  readonly concurrency?: number;
}

/** A flag the command cannot use: its message is all the user needs. */
export class FlagError extends Error {}

/**
 * Ends a command that threw: a bad flag or option (the run's `ConfigurationError`) as one
 * line, anything else with its stack. Exit code 1 either way.
 */
export function reportFailure(error: unknown): void {
  if (error instanceof FlagError || hasErrorCode(error, 'INVALID_CONFIG')) {
    console.error(`error: ${error instanceof Error ? error.message : String(error)}`);
  } else {
    console.error(error);
  }
  process.exitCode = 1;
}

/**
 * The command's arguments. `pnpm demo -- --orders 100` passes the `--` through; `pnpm demo
 * --orders 100` does not.
 */
export function cliArgs(): string[] {
  const args = process.argv.slice(2);
  if (args[0] === '--') args.shift();
  return args;
}

/** `raw` as a whole number (`10_000` reads as 10000); `undefined` when absent or empty. */
export function count(name: string, raw: string | undefined): number | undefined {
  if (raw === undefined || raw === '') return undefined;
  const value = Number(raw.replace(/_/g, ''));
  if (!Number.isInteger(value) || value < 0) {
    throw new FlagError(`${name} must be a whole number, got ${JSON.stringify(raw)}`);
  }
  return value;
}

/** The counts given in `values` (as `parseArgs` returns them), read with {@link count}. */
export function flowCounts(values: {
  readonly orders?: string | undefined;
  readonly seed?: string | undefined;
  readonly concurrency?: string | undefined;
}): FlowCounts {
  const counts: { -readonly [K in keyof FlowCounts]: number } = {};
  for (const name of ['orders', 'seed', 'concurrency'] as const) {
    const value = count(`--${name}`, values[name]);
    if (value !== undefined) counts[name] = value;
  }
  return counts;
}

/**
 * Waits for the run's report (stopping `progress` however it ends), prints the table of
 * checks and sets the exit code: 1 when a check failed.
 */
export async function printReport<R extends FlowReport>(
  progress: ProgressReporter,
  run: Promise<R>,
): Promise<R> {
  let report: R;
  try {
    report = await run;
  } finally {
    progress.stop();
  }
  console.log('');
  console.log(formatReport(report));
  process.exitCode = report.ok ? 0 : 1;
  return report;
}
