/**
 * The shipping service as a process: a RabbitMQ consumer of `payment.captured` through its
 * inbox (wired in service.ts).
 */
import { configFromEnv } from '../config';
import { serviceMain } from '../service-process';
import { startShippingService } from './service';

serviceMain('shipping', async () => {
  const config = configFromEnv();
  return startShippingService({
    databaseUrl: config.databaseUrl,
    schema: config.names.schemas.shipping,
    amqpUrl: config.amqpUrl,
    queue: config.names.paymentQueue,
  });
});
