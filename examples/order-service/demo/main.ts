/**
 * `pnpm demo [--orders N] [--seed S] [--concurrency C]`: the order-service flow in one
 * process on embedded PGlite (or PostgreSQL when DATABASE_URL is set) and the in-memory
 * broker, with faults injected everywhere; prints one table of checks and exits 1 when an
 * invariant does not hold. DEMO_ORDERS sets N as well. See docs/demo.md.
 */
import { parseArgs } from 'node:util';
import { progressReporter } from '../report/progress';
import { formatReport } from '../report/table';
import { runDemo, type DemoOptions, type DemoReport } from './run';

function parseNumber(name: string, raw: string | undefined): number | undefined {
  if (raw === undefined || raw === '') return undefined;
  const value = Number(raw.replace(/_/g, ''));
  if (!Number.isFinite(value))
    throw new Error(`${name} must be a number, got ${JSON.stringify(raw)}`);
  return value;
}

async function main(): Promise<void> {
  // `pnpm demo -- --orders 100` passes the `--` through; `pnpm demo --orders 100` does not.
  const args = process.argv.slice(2);
  if (args[0] === '--') args.shift();
  const { values } = parseArgs({
    args,
    options: {
      orders: { type: 'string', short: 'n' },
      seed: { type: 'string' },
      concurrency: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    console.log(
      'usage: pnpm demo [--orders N] [--seed S] [--concurrency C]\n' +
        '  DEMO_ORDERS=N sets the number of orders; DATABASE_URL runs it on PostgreSQL.',
    );
    return;
  }
  const databaseUrl = process.env.DATABASE_URL || undefined;
  const orders = parseNumber('--orders', values.orders ?? process.env.DEMO_ORDERS);
  const seed = parseNumber('--seed', values.seed);
  const concurrency = parseNumber('--concurrency', values.concurrency);
  const progress = progressReporter();
  const options: DemoOptions = {
    ...(orders === undefined ? {} : { orders }),
    ...(seed === undefined ? {} : { seed }),
    ...(concurrency === undefined ? {} : { concurrency }),
    ...(databaseUrl === undefined ? {} : { databaseUrl }),
    onProgress: progress.update,
  };
  console.log(
    `justonce demo: orders → payments → shipping in one process on ` +
      `${databaseUrl ? 'PostgreSQL (DATABASE_URL)' : 'PGlite (embedded, in memory)'} and the in-memory broker, ` +
      'with duplicate requests and deliveries, crashes and provider failures',
  );
  console.log('opening and migrating the stores (PGlite takes a few seconds to start)…');
  let report: DemoReport;
  try {
    report = await runDemo(options);
  } finally {
    progress.stop();
  }
  console.log('');
  console.log(formatReport(report));
  process.exitCode = report.ok ? 0 : 1;
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
