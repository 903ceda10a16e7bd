import path from 'node:path';
import { runOrderService } from '../../../examples/order-service/orchestrator/run-flow';
import { formatReport } from '../../../examples/order-service/report/table';
import { amqpUrl, databaseUrl, kafkaBrokers } from '../../../test-support/services';

/**
 * `pnpm example:nestjs-orders` at a small size: the flagship's flow (order-service.test.ts)
 * with the Nest application of examples/nestjs-orders as the orders service, SIGKILLed once
 * while the orders flow; duplicate requests and re-published messages as in the flagship.
 * Every order must be created, charged and shipped once.
 */
describe('order-service example with the Nest orders service (pnpm example:nestjs-orders)', () => {
  it('40 orders, one SIGKILL of the orders service: nothing doubled, nothing lost', async () => {
    const report = await runOrderService({
      orders: 40,
      concurrency: 8,
      killsPerService: 1,
      killed: ['orders'],
      ordersEntry: path.join(__dirname, '..', '..', '..', 'examples', 'nestjs-orders', 'main.ts'),
      settleTimeoutMs: 30_000,
      databaseUrl: databaseUrl(),
      kafkaBrokers: kafkaBrokers(),
      amqpUrl: amqpUrl(),
    });
    if (!report.ok) throw new Error(`${formatReport(report)}\nservice logs: ${report.logDir}`);
    expect(report.title).toContain('examples/nestjs-orders/main.ts');
    expect(report.kills).toEqual({ orders: 1, payments: 0, shipping: 0, provider: 0 });
    for (const ledger of Object.values(report.outcome.ledgers)) {
      expect(ledger).toEqual({ rows: 40, doubles: 0, lost: 0, unknown: 0 });
    }
  }, 90_000);
});
