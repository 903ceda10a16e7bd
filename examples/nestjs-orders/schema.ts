/**
 * The orders table for Drizzle: the flagship's table (examples/order-service/orders/app.ts,
 * `createOrdersTables`, which the run uses to create it) as Drizzle sees it. The run gives
 * each service a schema of its own, so the table is made for a schema.
 */
import { sql } from 'drizzle-orm';
import type { NodePgDatabase } from 'drizzle-orm/node-postgres';
import { integer, pgSchema, text, timestamp, uuid } from 'drizzle-orm/pg-core';
import type { DrizzleTransaction } from '@justonce/core/drizzle';

/** The orders table in `schema`. No unique index on the key, on purpose: a double would show. */
export function ordersTable(schema: string) {
  return pgSchema(schema).table('orders', {
    orderId: uuid('order_id').primaryKey(),
    idempotencyKey: text('idempotency_key').notNull(),
    customerId: text('customer_id').notNull(),
    amountCents: integer('amount_cents').notNull(),
    currency: text('currency').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true })
      .notNull()
      .default(sql`clock_timestamp()`),
  });
}

/** The orders table of one schema. */
export type OrdersTable = ReturnType<typeof ordersTable>;

/** The service's Drizzle database, on node-postgres. */
export type OrdersDatabase = NodePgDatabase;

/** What `db.transaction` hands its callback, and so what `@IdempotencyTransaction()` is. */
export type OrdersTransaction = DrizzleTransaction<OrdersDatabase>;
