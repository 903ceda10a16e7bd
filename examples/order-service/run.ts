/**
 * `pnpm example:orders [--orders N] [--concurrency C] [--kills K] [--seed S] [--keep]`: the
 * order-service example end to end on the local PostgreSQL, Kafka and RabbitMQ (`pnpm
 * services:up`): migrates each service's schema, starts the orders, payments, shipping and
 * provider processes, sends the orders with retries and duplicates while it SIGKILLs each
 * service and re-publishes messages, waits until the flow settles, prints one table of
 * checks and exits 1 when an invariant does not hold. See docs/order-service.md.
 */
import { parseArgs } from 'node:util';
import { runOrderService, type OrderServiceOptions } from './orchestrator/run-flow';
import { progressReporter } from './report/progress';
import { formatReport } from './report/table';

function count(name: string, raw: string | undefined): number | undefined {
  if (raw === undefined || raw === '') return undefined;
  const value = Number(raw.replace(/_/g, ''));
  if (!Number.isInteger(value) || value < 0) {
    throw new Error(`${name} must be a whole number, got ${JSON.stringify(raw)}`);
  }
  return value;
}

async function main(): Promise<void> {
  // `pnpm example:orders -- --orders 100` passes the `--` through.
  const args = process.argv.slice(2);
  if (args[0] === '--') args.shift();
  const { values } = parseArgs({
    args,
    options: {
      orders: { type: 'string', short: 'n' },
      concurrency: { type: 'string' },
      kills: { type: 'string' },
      seed: { type: 'string' },
      keep: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    console.log(
      'usage: pnpm example:orders [--orders N] [--concurrency C] [--kills K] [--seed S] [--keep]\n' +
        '  --orders       orders to send (default 2000)\n' +
        '  --concurrency  requests in flight (default 32)\n' +
        '  --kills        SIGKILLs of each service (default 2)\n' +
        '  --keep         keep the schemas, topic and queues for inspection\n' +
        '  DATABASE_URL, KAFKA_BROKERS, AMQP_URL: the services (default: `pnpm services:up`)',
    );
    return;
  }
  const orders = count('--orders', values.orders);
  const concurrency = count('--concurrency', values.concurrency);
  const kills = count('--kills', values.kills);
  const seed = count('--seed', values.seed);
  const progress = progressReporter();
  const options: OrderServiceOptions = {
    ...(orders === undefined ? {} : { orders }),
    ...(concurrency === undefined ? {} : { concurrency }),
    ...(kills === undefined ? {} : { killsPerService: kills }),
    ...(seed === undefined ? {} : { seed }),
    keep: values.keep ?? false,
    onProgress: progress.update,
    onEvent: progress.note,
  };
  console.log(
    `order service: ${orders ?? 2000} orders through 4 processes (orders, payments, shipping, ` +
      'provider) on PostgreSQL, Kafka and RabbitMQ, with SIGKILLs, retries and duplicates',
  );
  let report;
  try {
    report = await runOrderService(options);
  } finally {
    progress.stop();
  }
  console.log('');
  console.log(formatReport(report));
  if (values.keep)
    console.log(`kept: schemas *_${report.run}, topic and queue of run ${report.run}`);
  process.exitCode = report.ok ? 0 : 1;
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
