/**
 * `pnpm example:orders [--orders N] [--concurrency C] [--kills K] [--seed S] [--keep]
 * [--orders-app express|nestjs]`: the order-service example end to end on the local
 * PostgreSQL (or MySQL/MariaDB, a `mysql://` DATABASE_URL), Kafka and RabbitMQ
 * (`pnpm services:up`): migrates each service's schema,
 * starts the orders, payments, shipping and provider processes, sends the orders with
 * retries and duplicates while it SIGKILLs each service and re-publishes messages, waits
 * until the flow settles, prints one table of checks and exits 1 when an invariant does not
 * hold. See docs/order-service.md.
 * `--orders-app nestjs` (`pnpm example:nestjs-orders`) runs the orders service as the Nest
 * application of examples/nestjs-orders instead (docs/nestjs.md).
 */
import path from 'node:path';
import { parseArgs } from 'node:util';
import {
  cliArgs,
  count,
  FlagError,
  flowCounts,
  FLOW_OPTIONS,
  printReport,
  reportFailure,
} from './cli';
import { runOrderService, type OrderServiceOptions } from './orchestrator/run-flow';
import { progressReporter } from './report/progress';

/** The orders service of `--orders-app nestjs`: the Nest application's process entry. */
const NESTJS_ORDERS = path.join(__dirname, '..', 'nestjs-orders', 'main.ts');

async function main(): Promise<void> {
  const { values } = parseArgs({
    args: cliArgs(),
    options: {
      ...FLOW_OPTIONS,
      kills: { type: 'string' },
      keep: { type: 'boolean' },
      'orders-app': { type: 'string' },
    },
  });
  if (values.help) {
    console.log(
      'usage: pnpm example:orders [--orders N] [--concurrency C] [--kills K] [--seed S] [--keep]\n' +
        '                           [--orders-app express|nestjs]\n' +
        '  --orders       orders to send (default 2000)\n' +
        '  --concurrency  requests in flight (default 32)\n' +
        '  --kills        SIGKILLs of each service (default 2)\n' +
        '  --keep         keep the schemas, topic and queues for inspection\n' +
        '  --orders-app   the orders service: express (orders/main.ts, default) or nestjs\n' +
        '                 (examples/nestjs-orders/main.ts)\n' +
        '  DATABASE_URL, KAFKA_BROKERS, AMQP_URL: the services (default: `pnpm services:up`)',
    );
    return;
  }
  const counts = flowCounts(values);
  const kills = count('--kills', values.kills);
  const app = values['orders-app'] ?? 'express';
  if (app !== 'express' && app !== 'nestjs') {
    throw new FlagError(`--orders-app must be express or nestjs, got ${JSON.stringify(app)}`);
  }
  const mysql = /^(mysql|mariadb):/.test(process.env.DATABASE_URL ?? '');
  if (app === 'nestjs' && mysql) {
    // Its orders service writes through Drizzle on node-postgres and justonce's Drizzle adapter.
    throw new FlagError('--orders-app nestjs runs on PostgreSQL only, not on a mysql:// URL');
  }
  const progress = progressReporter();
  const options: OrderServiceOptions = {
    ...counts,
    ...(kills === undefined ? {} : { killsPerService: kills }),
    ...(app === 'nestjs' ? { ordersEntry: NESTJS_ORDERS } : {}),
    keep: values.keep ?? false,
    onProgress: progress.update,
    onEvent: progress.note,
  };
  const database = mysql ? 'MySQL/MariaDB' : 'PostgreSQL';
  console.log(
    `order service: ${counts.orders ?? 2000} orders through 4 processes (orders, payments, shipping, ` +
      `provider) on ${database}, Kafka and RabbitMQ, with SIGKILLs, retries and duplicates`,
  );
  const report = await printReport(progress, runOrderService(options));
  console.log(`service logs: ${report.logDir}`);
  if (values.keep)
    console.log(`kept: schemas *_${report.run}, topic and queue of run ${report.run}`);
}

main().catch(reportFailure);
