/**
 * The orders service as a process: the orders API, and a relay that publishes the
 * `order.created` events its transactions committed to Kafka (wired in service.ts).
 */
import { configFromEnv } from '../config';
import { serviceMain } from '../service-process';
import { startOrdersService } from './service';

serviceMain('orders', async () => {
  const config = configFromEnv();
  const orders = await startOrdersService({
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
