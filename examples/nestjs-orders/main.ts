/**
 * The Nest orders service as a process, a drop-in for the flagship's orders/main.ts: the
 * same configuration, the same `READY orders` line, the same stop on SIGTERM.
 * `pnpm example:nestjs-orders` runs the flagship's flow with it.
 */
import { configFromEnv } from '../order-service/config';
import { serviceMain } from '../order-service/service-process';
import { startNestOrdersService } from './service';

serviceMain('orders', async () => {
  const config = configFromEnv();
  const orders = await startNestOrdersService({
    databaseUrl: config.databaseUrl,
    schema: config.names.schemas.orders,
    kafkaBrokers: config.kafkaBrokers,
    topic: config.names.orderTopic,
    port: config.ordersPort,
    // 'keep' leaves published events in the table, for the run's checks to count.
    onPublished: 'keep',
  });
  return orders.stop;
});
