/**
 * Runs the cells of the crash-point matrix, a few at a time (their children mostly wait on
 * brokers and on each other's start-up), and reports one row per cell. A cell that throws
 * is a failed row with its error, so one broken cell never hides the others.
 */
import { runBrokerCell } from './broker-cell';
import { openBrokers, type Brokers } from './brokers';
import { cellName, type MatrixCell } from './cells';
import type { CellCounts, CellSize } from './cell-run';
import { runCliCell } from './cli-cell';
import { runHttpCell } from './http-cell';

/** One row of the table. */
export interface CellResult {
  readonly name: string;
  readonly cell: MatrixCell;
  /**
   * `passed`: killed at the point as often as asked, nothing lost, nothing doubled; `failed`:
   * anything else (see `error`).
   */
  readonly status: 'passed' | 'failed';
  readonly kills: number;
  readonly messages: number;
  readonly lost: number;
  readonly doubled: number;
  readonly ms: number;
  readonly error?: string;
}

/** Options of {@link runMatrix}. */
export interface MatrixRun extends CellSize {
  /** Cells running at once. */
  readonly concurrency: number;
  /** Called as each cell ends, in the order they end. */
  readonly onResult?: (result: CellResult) => void;
}

function scenario(cell: MatrixCell, size: CellSize, brokers: Brokers): Promise<CellCounts> {
  switch (cell.scenario) {
    case 'consumer':
    case 'relay':
      return runBrokerCell(cell, size, brokers);
    case 'http':
      return runHttpCell(cell, size);
    case 'cli':
      return runCliCell(cell, size, brokers);
  }
}

async function runCell(cell: MatrixCell, run: MatrixRun, brokers: Brokers): Promise<CellResult> {
  const base = { name: cellName(cell), cell, messages: run.messages };
  const started = performance.now();
  try {
    const counts = await scenario(cell, run, brokers);
    const ms = Math.round(performance.now() - started);
    const problems = [
      ...(counts.kills < run.kills ? [`killed ${counts.kills} of ${run.kills} times`] : []),
      ...(counts.problem === undefined ? [] : [counts.problem]),
    ];
    const ok = problems.length === 0 && counts.lost === 0 && counts.doubled === 0;
    return {
      ...base,
      status: ok ? 'passed' : 'failed',
      kills: counts.kills,
      lost: counts.lost,
      doubled: counts.doubled,
      ms,
      ...(problems.length > 0 ? { error: problems.join('; ') } : {}),
    };
  } catch (error) {
    const ms = Math.round(performance.now() - started);
    const message = error instanceof Error ? error.message : String(error);
    return { ...base, status: 'failed', kills: 0, lost: -1, doubled: -1, ms, error: message };
  }
}

/** Runs `cells`; resolves to their rows in the order of `cells`. */
export async function runMatrix(
  cells: readonly MatrixCell[],
  run: MatrixRun,
): Promise<CellResult[]> {
  const brokers = openBrokers();
  const results: CellResult[] = new Array<CellResult>(cells.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < cells.length) {
      const index = next++;
      const result = await runCell(cells[index]!, run, brokers);
      results[index] = result;
      run.onResult?.(result);
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.max(1, run.concurrency) }, worker));
  } finally {
    await brokers.close();
  }
  return results;
}
