/**
 * The shipping service's handler: one shipment per `payment.captured`, written in the
 * inbox's transaction, so it commits exactly when the message's dedup record does.
 */
import { messageHandler, on, type Handler, type Store } from '@justonce/core';
import { PaymentCaptured } from '../messages';

/**
 * Creates the shipments table, on PostgreSQL (PGlite) or MySQL (MariaDB). No unique index on
 * the order id, on purpose: a double would show.
 */
export async function createShippingTables(store: Store): Promise<void> {
  await store.knex.raw(
    store.dialect === 'mysql'
      ? `create table if not exists ${store.names.table('shipments')} (
           id bigint auto_increment primary key,
           order_id char(36) not null,
           payment_id varchar(255) not null,
           shipped_at datetime(6) not null default current_timestamp(6)
         )`
      : `create table if not exists ${store.names.table('shipments')} (
           id bigint generated always as identity primary key,
           order_id uuid not null,
           payment_id text not null,
           shipped_at timestamptz not null default clock_timestamp()
         )`,
  );
}

/** The handler of the shipping consumer. */
export function shippingHandler(store: Store): Handler {
  return messageHandler({
    routes: [
      on(PaymentCaptured, async (payment, ctx) => {
        await ctx.trx.withSchema(store.schema).table('shipments').insert({
          order_id: payment.orderId,
          payment_id: payment.paymentId,
        });
      }),
    ],
  });
}
