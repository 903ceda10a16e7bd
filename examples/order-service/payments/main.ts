/**
 * The payments service as a process: a Kafka consumer of `order.created` through its inbox,
 * charging through the provider, and a relay that publishes the `payment.captured` events
 * its transactions committed to RabbitMQ (wired in service.ts).
 */
import { configFromEnv } from '../config';
import { serviceMain } from '../service-process';
import { startPaymentsService } from './service';

serviceMain('payments', async () => {
  const config = configFromEnv();
  const { names } = config;
  return startPaymentsService({
    databaseUrl: config.databaseUrl,
    schema: names.schemas.payments,
    kafkaBrokers: config.kafkaBrokers,
    groupId: names.paymentsGroup,
    topic: names.orderTopic,
    queue: names.paymentQueue,
    amqpUrl: config.amqpUrl,
    providerUrl: `http://127.0.0.1:${config.providerPort}`,
    // 'keep' leaves published events in the table, for the run's checks to count.
    onPublished: 'keep',
  });
});
