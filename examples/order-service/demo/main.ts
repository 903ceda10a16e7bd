/**
 * `pnpm demo [--orders N] [--seed S] [--concurrency C]`: the order-service flow in one
 * process on embedded PGlite (or PostgreSQL, MySQL or MariaDB when DATABASE_URL is set) and the in-memory
 * broker, with faults injected everywhere; prints one table of checks and exits 1 when an
 * invariant does not hold. DEMO_ORDERS sets N as well. See docs/demo.md.
 */
import { parseArgs } from 'node:util';
import { cliArgs, flowCounts, FLOW_OPTIONS, printReport, reportFailure } from '../cli';
import { progressReporter } from '../report/progress';
import { runDemo, type DemoOptions } from './run';

/** What the demo runs on, as its first line says. */
function databaseName(databaseUrl: string | undefined): string {
  if (databaseUrl === undefined) return 'PGlite (embedded, in memory)';
  return /^(mysql|mariadb):/.test(databaseUrl)
    ? 'MySQL/MariaDB (DATABASE_URL)'
    : 'PostgreSQL (DATABASE_URL)';
}

async function main(): Promise<void> {
  const { values } = parseArgs({ args: cliArgs(), options: FLOW_OPTIONS });
  if (values.help) {
    console.log(
      'usage: pnpm demo [--orders N] [--seed S] [--concurrency C]\n' +
        '  DEMO_ORDERS=N sets the number of orders; DATABASE_URL runs it on PostgreSQL,\n' +
        '  or on MySQL/MariaDB with a mysql:// URL.',
    );
    return;
  }
  const databaseUrl = process.env.DATABASE_URL || undefined;
  const counts = flowCounts({ ...values, orders: values.orders ?? process.env.DEMO_ORDERS });
  const progress = progressReporter();
  const options: DemoOptions = {
    ...counts,
    ...(databaseUrl === undefined ? {} : { databaseUrl }),
    onProgress: progress.update,
  };
  console.log(
    `justonce demo: orders → payments → shipping in one process on ` +
      `${databaseName(databaseUrl)} and the in-memory broker, ` +
      'with duplicate requests and deliveries, crashes and provider failures',
  );
  console.log(
    databaseUrl
      ? 'opening and migrating the stores…'
      : 'opening and migrating the stores (PGlite takes a few seconds to start)…',
  );
  await printReport(progress, runDemo(options));
}

main().catch(reportFailure);
