/**
 * What every scenario of the crash-point matrix shares: the size of a run, what a cell
 * reports, the environment that makes a child die at the cell's point, and the wait for a
 * child that either dies there or gets everything done.
 */
import type { ChildReport, SpawnedChild } from '../child-process';
import type { MatrixCell } from './cells';

/** How big a run of one cell is. */
export interface CellSize {
  /** Distinct messages (requests, letters) per cell. */
  readonly messages: number;
  /** Child processes killed at the point, one after another, before the one that finishes. */
  readonly kills: number;
}

/** What a scenario counted. */
export interface CellCounts {
  /** Children that died by SIGKILL at the point. */
  readonly kills: number;
  /** Messages with no effect. */
  readonly lost: number;
  /** Messages with more than one effect. */
  readonly doubled: number;
  /** A check of the scenario's own that failed (e.g. a replay that was not one). */
  readonly problem?: string;
}

/** How long a child may take to die at its point, or a recovery to finish. */
export const CHILD_TIMEOUT_MS = 90_000;

/** The environment that makes a child SIGKILL itself the cell's `nth` time at its point. */
export function crashEnv(cell: MatrixCell): Record<string, string> {
  return { JUSTONCE_CRASH_AT: `${cell.point}@${cell.nth}` };
}

/** Lost (no effect) and doubled (more than one) among `ids`. */
export function lostAndDoubled(
  counts: ReadonlyMap<string, number>,
  ids: readonly string[],
): { lost: number; doubled: number } {
  return {
    lost: ids.filter((id) => !counts.has(id)).length,
    doubled: ids.filter((id) => (counts.get(id) ?? 0) > 1).length,
  };
}

/**
 * Waits until the child dies by SIGKILL (`killed`) or `done` says everything was processed
 * (`done`; the child is then killed by us, which is no kill at the point). Each turn first
 * hands the child's new reports to `onReport`. Any other exit, or neither in time, throws
 * with the child's stderr.
 */
export async function killedOrDone<R extends ChildReport>(
  child: SpawnedChild<R>,
  done: () => Promise<boolean>,
  onReport: (report: R) => void = () => undefined,
  timeoutMs = CHILD_TIMEOUT_MS,
): Promise<'killed' | 'done'> {
  const deadline = Date.now() + timeoutMs;
  let seen = 0;
  let gone: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  void child.exited.then((exit) => (gone = exit));
  for (;;) {
    const exit = gone;
    while (seen < child.reports.length) onReport(child.reports[seen++]!);
    if (exit !== undefined) {
      if (exit.signal === 'SIGKILL') return 'killed';
      throw new Error(`child exited (${exit.signal ?? `code ${exit.code}`}); ${child.stderr()}`);
    }
    if (await done()) {
      await child.kill();
      return 'done';
    }
    if (Date.now() > deadline) {
      await child.kill();
      throw new Error(`neither killed nor done in ${timeoutMs} ms; ${child.stderr().slice(-2000)}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
