import { runOrderService } from '../../../examples/order-service/orchestrator/run-flow';
import { formatReport } from '../../../examples/order-service/report/table';
import { amqpUrl, databaseUrl, kafkaBrokers } from '../../../test-support/services';
import { mysqlUrl } from './db';

/**
 * `pnpm example:orders` at a small size against the real services: four processes (orders,
 * payments, shipping, provider), each SIGKILLed once while the orders flow, duplicate
 * requests and re-published messages; every order must be created, charged and shipped once,
 * on PostgreSQL and on MariaDB.
 */
describe('order-service example (pnpm example:orders)', () => {
  it.each([
    ['PostgreSQL', databaseUrl],
    ['MariaDB', mysqlUrl],
  ])(
    'on %s: 150 orders, one SIGKILL per service: nothing doubled, nothing lost',
    async (_, url) => {
      const report = await runOrderService({
        orders: 150,
        concurrency: 16,
        killsPerService: 1,
        settleTimeoutMs: 60_000,
        databaseUrl: url(),
        kafkaBrokers: kafkaBrokers(),
        amqpUrl: amqpUrl(),
      });
      if (!report.ok) throw new Error(`${formatReport(report)}\nservice logs: ${report.logDir}`);
      expect(report.kills).toEqual({ orders: 1, payments: 1, shipping: 1, provider: 1 });
      for (const ledger of Object.values(report.outcome.ledgers)) {
        expect(ledger).toEqual({ rows: 150, doubles: 0, lost: 0, unknown: 0 });
      }
    },
    150_000,
  );
});
