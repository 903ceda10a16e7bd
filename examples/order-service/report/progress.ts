/** Progress of a run: a bar on a terminal (on stderr), a plain line every 10% (or 5 s) otherwise. */
import { MultiBar, Presets, type SingleBar } from 'cli-progress';

/** How far a run is. */
export interface FlowProgress {
  /** Orders the API accepted so far. */
  readonly accepted: number;
  /** Orders shipped so far. */
  readonly shipped: number;
  readonly total: number;
}

/** Shows progress; `note` prints a line (a kill, a re-publish) without breaking the bar. */
export interface ProgressReporter {
  update(progress: FlowProgress): void;
  note(line: string): void;
  stop(): void;
}

/** A progress bar when stderr is a terminal, plain lines otherwise. */
export function progressReporter(): ProgressReporter {
  if (process.stderr.isTTY) {
    // A MultiBar of one bar: its log() prints a line above the bar without breaking it.
    const bars = new MultiBar(
      {
        format: ' {bar} {percentage}% | {value}/{total} shipped | {accepted} accepted',
        hideCursor: true,
      },
      Presets.shades_classic,
    );
    let bar: SingleBar | undefined;
    return {
      update: (p) => {
        bar ??= bars.create(p.total, 0, { accepted: 0 });
        bar.update(p.shipped, { accepted: p.accepted });
      },
      note: (line) => bars.log(`  ${line}\n`),
      stop: () => bars.stop(),
    };
  }
  let nextTenth = 1;
  let lastAt = Date.now();
  return {
    update: (p) => {
      const tenth = Math.floor((p.shipped * 10) / p.total);
      if (tenth >= nextTenth || Date.now() - lastAt >= 5_000) {
        nextTenth = tenth + 1;
        lastAt = Date.now();
        console.log(`  progress: ${p.accepted}/${p.total} accepted, ${p.shipped} shipped`);
      }
    },
    note: (line) => console.log(`  ${line}`),
    stop: () => undefined,
  };
}
