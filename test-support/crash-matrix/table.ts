/**
 * The crash-point matrix's table, as `pnpm crash-matrix` prints it and writes it to
 * `docs/crash-matrix.md`: one row per cell, then the machine, the commit and the command.
 */
import type { CellResult } from './run-matrix';

/** Where and how a run was made. */
export interface RunFacts {
  readonly command: string;
  readonly commit: string;
  readonly machine: string;
  readonly date: string;
  /** Wall time of the whole run, in ms. */
  readonly totalMs: number;
}

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}

function row(r: CellResult): string {
  const count = (n: number) => (n < 0 ? '?' : String(n));
  const cells = [r.name, r.kills, r.messages, count(r.lost), count(r.doubled), seconds(r.ms)];
  return `| ${cells.join(' | ')} | ${r.status} |`;
}

/** The table alone (markdown). */
export function matrixTable(results: readonly CellResult[]): string {
  return [
    '| cell (point × transport × mode) | kills | messages | lost | doubled | time | status |',
    '|---|--:|--:|--:|--:|--:|---|',
    ...results.map(row),
  ].join('\n');
}

/** The page `docs/crash-matrix.md`: what the matrix checks, the table, the run's facts. */
export function matrixPage(results: readonly CellResult[], facts: RunFacts): string {
  const failures = results.filter((r) => r.status === 'failed');
  return [
    '# Crash-point matrix',
    '',
    'Each cell kills a process with SIGKILL at one named crash point (`JUSTONCE_CRASH_AT`,',
    'see [failure modes](failure-modes.md)) while it consumes, relays, serves or requeues',
    'messages that were injected twice; then restarts it without the crash point until',
    'everything is processed, and counts the business effects per message: **lost** = messages',
    'with no effect, **doubled** = messages with more than one. _kills_ is how many processes',
    'died at the point in the cell; _time_ is the cell’s wall time, child start-ups included.',
    'In the `once.after-effect` cells each message also makes a remote call through `ctx.once`',
    'before its business write, counted by its distinct idempotency keys (a call made again',
    'with the same key after a kill before its record is the window the key covers).',
    'What each point and scenario does: `test-support/crash-matrix/cells.ts`. Regenerate this',
    'page with the command below (`--size N` messages per cell, `--kills K` kills per cell,',
    '`--only <text>` for the cells whose name contains it).',
    '',
    matrixTable(results),
    '',
    `- Cells: ${results.length} run, ${failures.length} failed`,
    `- Command: \`${facts.command}\``,
    `- Commit: \`${facts.commit}\``,
    `- Machine: ${facts.machine}`,
    `- Date: ${facts.date}; whole run ${seconds(facts.totalMs)}`,
    ...(failures.length === 0
      ? []
      : ['', '## Failures', '', ...failures.map((r) => `- ${r.name}: ${r.error ?? ''}`)]),
    '',
  ].join('\n');
}
