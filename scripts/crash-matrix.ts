/**
 * `pnpm crash-matrix [--size N] [--kills K] [--only <text>] [--concurrency C] [--no-write]`
 *
 * Runs the crash-point matrix (test-support/crash-matrix/): every named crash point × every
 * transport × every consumer mode, each cell killed with SIGKILL at its point `K` times
 * (default 2) over `N` messages (default 20), with duplicates injected; prints the table
 * (cell, kills, messages, lost, doubled, time) and writes it to docs/crash-matrix.md
 * (unless `--no-write`, or `--only` picked a part of it). Exit 1 when a cell failed.
 */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem, type } from 'node:os';
import { join } from 'node:path';
import { format, resolveConfig } from 'prettier';
import { ensureServices } from '../services';
import { MatrixUsageError, parseMatrixArguments } from '../test-support/crash-matrix/arguments';
import { selectCells } from '../test-support/crash-matrix/cells';
import { runMatrix } from '../test-support/crash-matrix/run-matrix';
import { matrixPage, matrixTable } from '../test-support/crash-matrix/table';

function commit(): string {
  try {
    const head = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain'], { encoding: 'utf8' }).trim();
    return dirty === '' ? head : `${head} (with uncommitted changes)`;
  } catch {
    return 'unknown';
  }
}

function machine(): string {
  const cores = cpus();
  const gb = Math.round(totalmem() / 2 ** 30);
  const load = loadavg()[0]!.toFixed(1);
  return `${type()}, ${cores.length} × ${cores[0]?.model.trim() ?? 'unknown CPU'}, ${gb} GB, Node ${process.version}, load average ${load} at the end`;
}

async function main(): Promise<void> {
  const args = parseMatrixArguments(process.argv.slice(2));
  const { size: messages, kills, concurrency } = args;
  const cells = selectCells(args.only);
  if (cells.length === 0) throw new Error(`no cell matches ${JSON.stringify(args.only)}`);

  process.env['AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED'] ??= 'true';
  await ensureServices(['postgres', 'kafka', 'sqs', 'rabbitmq']);
  const started = performance.now();
  const results = await runMatrix(cells, {
    messages,
    kills,
    concurrency,
    onResult: (r) => console.error(`${r.status.padEnd(7)} ${r.name} (${r.ms} ms)`),
  });
  const totalMs = Math.round(performance.now() - started);

  const given = process.argv.slice(2).join(' ');
  const facts = {
    command: `pnpm crash-matrix${given === '' ? '' : ` ${given}`}`,
    commit: commit(),
    machine: machine(),
    date: new Date().toISOString().slice(0, 16).replace('T', ' ') + ' UTC',
    totalMs,
  };
  console.log(matrixTable(results));
  const failed = results.filter((r) => r.status === 'failed');
  for (const r of failed) console.log(`failed: ${r.name}: ${r.error ?? ''}`);
  console.log(
    JSON.stringify({
      crashMatrix: { messages, kills, totalMs, results: results.length, failed: failed.length },
    }),
  );
  if (args.write) {
    // Formatted as the repository's prettier check wants it (aligned table columns).
    const file = join(__dirname, '..', 'docs', 'crash-matrix.md');
    const options = { ...(await resolveConfig(file)), filepath: file };
    writeFileSync(file, await format(matrixPage(results, facts), options));
  }
  if (failed.length > 0) process.exitCode = 1;
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exitCode = error instanceof MatrixUsageError ? 2 : 1;
});
