/**
 * The crash-point matrix at its small size: every cell of test-support/crash-matrix/cells.ts
 * (each named crash point × transport × mode) killed once with SIGKILL at its point, with
 * duplicates injected, then run to the end by a process without the crash point. Each cell
 * must lose nothing and double nothing. `pnpm crash-matrix --size N` runs the same cells
 * bigger and writes docs/crash-matrix.md.
 */
import { killChildren } from '../../../test-support/child-process';
import { CELLS, cellName } from '../../../test-support/crash-matrix/cells';
import { runMatrix, type CellResult } from '../../../test-support/crash-matrix/run-matrix';

/** Messages per cell and kills per cell in CI; the cells run a few at a time. */
const SMALL = { messages: 6, kills: 1, concurrency: 4 } as const;

let results: ReadonlyMap<string, CellResult>;

beforeAll(async () => {
  const rows = await runMatrix(CELLS, SMALL);
  results = new Map(rows.map((row) => [row.name, row]));
}, 600_000);

// A cell cleans up its own children; this is for a run cut short.
afterAll(killChildren);

describe('the crash-point matrix, each cell killed once at its point', () => {
  it.each(CELLS.map((cell) => [cellName(cell)]))(
    '%s: killed there, nothing lost, nothing doubled',
    (name) => {
      const { kills, lost, doubled, error } = results.get(name)!;
      expect({ kills, lost, doubled, error }).toEqual({
        kills: SMALL.kills,
        lost: 0,
        doubled: 0,
        error: undefined,
      });
    },
  );
});
