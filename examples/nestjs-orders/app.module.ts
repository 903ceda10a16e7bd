/**
 * The orders service as a Nest module: justonce's module with the store in the orders schema,
 * Drizzle's transactions for the `@Idempotent` route and the outbox, and a relay that
 * publishes `order.created` to Kafka; and the orders controller.
 */
import { Module, type DynamicModule } from '@nestjs/common';
import { drizzleTransactions } from '@justonce/core/drizzle';
import { createKafkaPublisher } from '@justonce/kafka';
import { JustonceModule } from '@justonce/nestjs';
import type { OrdersServiceOptions } from '../order-service/orders/service';
import { ORDER_TOPIC, OrdersController, ORDERS_TABLE } from './orders.controller';
import { ordersTable, type OrdersDatabase } from './schema';

/** Options of {@link OrdersAppModule.forRoot}: the flagship service's, and the Drizzle database. */
export interface OrdersAppOptions extends Omit<OrdersServiceOptions, 'port'> {
  /** Where the order rows go, on the same PostgreSQL database as the store. */
  readonly db: OrdersDatabase;
}

@Module({})
export class OrdersAppModule {
  /** The application's root module. */
  static forRoot(options: OrdersAppOptions): DynamicModule {
    return {
      module: OrdersAppModule,
      imports: [
        JustonceModule.forRoot({
          // The run migrated the schema and created the orders table: the service does not.
          store: {
            connectionString: options.databaseUrl,
            schema: options.schema,
            pool: { max: 10 },
          },
          // justonce opens each request's transaction with db.transaction, and the route, the
          // outbox and the key's record all write in it.
          transactions: drizzleTransactions(options.db),
          // As the flagship's createOrderKeys: a key whose request died with its process is
          // free again after 3 s.
          operations: { leaseMs: 3_000 },
          relays: [
            {
              publisher: createKafkaPublisher({ brokers: [...options.kafkaBrokers] }),
              onPublished: options.onPublished,
            },
          ],
        }),
      ],
      controllers: [OrdersController],
      providers: [
        { provide: ORDERS_TABLE, useValue: ordersTable(options.schema) },
        { provide: ORDER_TOPIC, useValue: options.topic },
      ],
    };
  }
}
