/**
 * `pnpm demo [--messages N] [--seed S] [--concurrency C]`: runs the payments demo on embedded
 * PGlite (or on PostgreSQL when DATABASE_URL is set), shows progress, prints the figures and
 * exits 1 when an invariant does not hold. DEMO_MESSAGES sets N as well.
 */
import { parseArgs } from 'node:util';
import { SingleBar, Presets } from 'cli-progress';
import { runDemo, type DemoOptions, type DemoProgress, type DemoResult } from './run';
import { formatTable } from './table';

function parseNumber(name: string, raw: string | undefined): number | undefined {
  if (raw === undefined || raw === '') return undefined;
  const value = Number(raw.replace(/_/g, ''));
  if (!Number.isFinite(value))
    throw new Error(`${name} must be a number, got ${JSON.stringify(raw)}`);
  return value;
}

/** A progress bar (on stderr) on a terminal; a plain line every 10% (or 5 s) anywhere else. */
function progressReporter(): { update: (p: DemoProgress) => void; stop: () => void } {
  if (process.stderr.isTTY) {
    const bar = new SingleBar(
      {
        format: ' {bar} {percentage}% | {value}/{total} messages settled | {deliveries} deliveries',
        hideCursor: true,
      },
      Presets.shades_classic,
    );
    let started = false;
    return {
      update: (p) => {
        if (!started) {
          bar.start(p.total, 0, { deliveries: 0 });
          started = true;
        }
        bar.update(p.done, { deliveries: p.deliveries });
      },
      stop: () => {
        if (started) bar.stop();
      },
    };
  }
  let nextTenth = 1;
  let lastAt = Date.now();
  return {
    update: (p) => {
      const tenth = Math.floor((p.done * 10) / p.total);
      if (tenth >= nextTenth || Date.now() - lastAt >= 5_000) {
        nextTenth = tenth + 1;
        lastAt = Date.now();
        console.log(
          `  progress: ${p.done}/${p.total} messages settled, ${p.deliveries} deliveries`,
        );
      }
    },
    stop: () => undefined,
  };
}

async function main(): Promise<void> {
  // `pnpm demo -- --messages 100` passes the `--` through; `pnpm demo --messages 100` does not.
  const args = process.argv.slice(2);
  if (args[0] === '--') args.shift();
  const { values } = parseArgs({
    args,
    options: {
      messages: { type: 'string', short: 'n' },
      seed: { type: 'string' },
      concurrency: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    console.log(
      'usage: pnpm demo [--messages N] [--seed S] [--concurrency C]\n' +
        '  DEMO_MESSAGES=N sets the number of messages; DATABASE_URL runs it on PostgreSQL.',
    );
    return;
  }
  const databaseUrl = process.env.DATABASE_URL || undefined;
  const messages = parseNumber('--messages', values.messages ?? process.env.DEMO_MESSAGES);
  const seed = parseNumber('--seed', values.seed);
  const concurrency = parseNumber('--concurrency', values.concurrency);
  const progress = progressReporter();
  const options: DemoOptions = {
    ...(messages === undefined ? {} : { messages }),
    ...(seed === undefined ? {} : { seed }),
    ...(concurrency === undefined ? {} : { concurrency }),
    ...(databaseUrl === undefined ? {} : { databaseUrl }),
    onProgress: progress.update,
  };

  console.log(
    `justonce payments demo on ${databaseUrl ? 'PostgreSQL (DATABASE_URL)' : 'PGlite (embedded, in memory)'} ` +
      'with the in-memory broker: duplicates, concurrent redeliveries, a poison message and crashes at every point',
  );
  console.log('opening and migrating the store (PGlite takes a few seconds to start)…');
  let result: DemoResult;
  try {
    result = await runDemo(options);
  } finally {
    progress.stop();
  }
  console.log('');
  console.log(formatTable(result));
  process.exitCode = result.ok ? 0 : 1;
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
