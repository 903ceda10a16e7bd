/**
 * The justonce side of `pnpm bench orders`: the order-service example's own orders,
 * payments and shipping services, started in one process through the functions their
 * processes start them with (orders/service.ts, payments/service.ts, shipping/service.ts:
 * the same pool sizes, consumer settings and time limits) against the real PostgreSQL, Kafka
 * and RabbitMQ. The one difference: the relays delete published events (`onPublished:
 * 'delete'`, the library's default), where the example keeps them for its end-of-run checks
 * to count.
 */
import { createStore, type Store } from '@justonce/core';
import { createOrdersTables } from '../examples/order-service/orders/app';
import { startOrdersService } from '../examples/order-service/orders/service';
import { createPaymentsTables } from '../examples/order-service/payments/handler';
import { startPaymentsService } from '../examples/order-service/payments/service';
import { createShippingTables } from '../examples/order-service/shipping/handler';
import { startShippingService } from '../examples/order-service/shipping/service';
import { startFlow, type BenchEnv, type Flow, type FlowNames } from './_orders-flow';

/**
 * Migrates `schema` and creates the service's business table in it, as the example's
 * orchestrator does before its services start.
 */
async function prepareSchema(
  env: BenchEnv,
  schema: string,
  createTables: (store: Store) => Promise<void>,
): Promise<void> {
  const store = await createStore({ connectionString: env.databaseUrl, schema });
  await store.migrate();
  await createTables(store);
  await store.close();
}

/** Starts the justonce side's three services on `names`. */
export async function startJustonceFlow(env: BenchEnv, names: FlowNames): Promise<Flow> {
  const { schemas } = names;
  await prepareSchema(env, schemas.shipping, createShippingTables);
  await prepareSchema(env, schemas.payments, createPaymentsTables);
  await prepareSchema(env, schemas.orders, createOrdersTables);
  return startFlow({
    shipping: (shipped) =>
      startShippingService({
        databaseUrl: env.databaseUrl,
        schema: schemas.shipping,
        amqpUrl: env.amqpUrl,
        queue: names.queue,
        // The time of each order's first settled delivery: its shipment row committed.
        onSettled: (event) => {
          if (event.action !== 'acked') return;
          const { orderId } = JSON.parse(event.message.content.toString()) as { orderId: string };
          if (!shipped.has(orderId)) shipped.set(orderId, performance.now());
        },
      }),
    payments: () =>
      startPaymentsService({
        databaseUrl: env.databaseUrl,
        schema: schemas.payments,
        kafkaBrokers: env.kafkaBrokers,
        groupId: names.group,
        topic: names.topic,
        queue: names.queue,
        amqpUrl: env.amqpUrl,
        providerUrl: env.providerUrl,
        onPublished: 'delete',
      }),
    orders: () =>
      startOrdersService({
        databaseUrl: env.databaseUrl,
        schema: schemas.orders,
        kafkaBrokers: env.kafkaBrokers,
        topic: names.topic,
        port: 0,
        onPublished: 'delete',
      }),
  });
}
