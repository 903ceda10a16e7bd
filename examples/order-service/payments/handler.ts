/**
 * The payments service's handler: for each `order.created`, charge the order once through the
 * provider, record the payment and emit `payment.captured`.
 *
 * The charge is outside the database, so the inbox's transaction cannot undo it: it runs as
 * the step `charge` of the side-effect ledger (`ctx.once`), whose record is written outside
 * the inbox's transaction (in the inbox's `ledger`) and survives a rollback of it. A
 * redelivery after any failure finds the charge's stored answer and does not call the
 * provider again; a call cut short (time-out, crash during the call or before its record) is
 * made again with the same idempotency key, which the provider dedupes. The payment row and
 * the event are written in the inbox's transaction.
 */
import {
  createInbox,
  createOperations,
  isLeaseLostError,
  messageHandler,
  on,
  type Handler,
  type Inbox,
  type InboxErrorClass,
  type InboxOptions,
  type Operations,
  type Store,
} from '@justonce/core';
import { OrderCreated, PaymentCaptured } from '../messages';
import type { ProviderClient } from './provider-client';

/** Where a failure can be injected (the one-process demo does). */
export type PaymentStep =
  /** The provider charged; the step's record is not written yet. */
  | 'charged'
  /** The payment row and the event are written; the inbox's transaction is not committed. */
  | 'recorded';

/** Options of {@link paymentsHandler}. */
export interface PaymentsOptions {
  /** The payments service's store (its own schema). */
  readonly store: Store;
  readonly provider: ProviderClient;
  /** The queue (or topic) `payment.captured` goes to. */
  readonly destination: string;
  /** Called at each {@link PaymentStep}; a throw there fails the delivery. */
  readonly onStep?: (step: PaymentStep, orderId: string) => void;
}

/**
 * Creates the payments table, on PostgreSQL (PGlite) or MySQL (MariaDB). No unique index on
 * the order id, on purpose: a double would show.
 */
export async function createPaymentsTables(store: Store): Promise<void> {
  await store.knex.raw(
    store.dialect === 'mysql'
      ? `create table if not exists ${store.names.table('payments')} (
           id bigint auto_increment primary key,
           order_id char(36) not null,
           payment_id varchar(255) not null,
           amount_cents integer not null,
           captured_at datetime(6) not null default current_timestamp(6)
         )`
      : `create table if not exists ${store.names.table('payments')} (
           id bigint generated always as identity primary key,
           order_id uuid not null,
           payment_id text not null,
           amount_cents integer not null,
           captured_at timestamptz not null default clock_timestamp()
         )`,
  );
}

/**
 * The payments inbox's `classify`: a charge whose lease ran out before its record was written
 * (the process stalled past `leaseMs`) is retried like any transient failure instead of
 * dead-lettered; the redelivery finds the record and replays it, or waits for its new owner.
 */
export function classifyPaymentError(error: unknown): InboxErrorClass | undefined {
  return isLeaseLostError(error) ? 'transient' : undefined;
}

/**
 * The ledger the charges are recorded in (`ctx.once`): a charge whose process died is taken
 * over after leaseMs; a redelivery waits for that.
 */
export function createCharges(store: Store): Operations {
  return createOperations({ store, leaseMs: 4_000, waitForInProgressMs: 6_000 });
}

/**
 * The payments consumer's inbox: 20 attempts, the charges recorded in `charges`
 * (`createCharges`), a charge whose lease ran out retried as a transient failure
 * (`classifyPaymentError`). `onStep`: the inbox's step hook (the demo crashes deliveries
 * through it).
 */
export function createPaymentsInbox(
  store: Store,
  charges: Operations,
  onStep?: InboxOptions['onStep'],
): Inbox {
  return createInbox({
    store,
    consumer: 'payments',
    ledger: charges,
    onStep,
    maxAttempts: 20,
    classify: classifyPaymentError,
  });
}

/** The handler of the payments consumer. */
export function paymentsHandler(options: PaymentsOptions): Handler {
  const { store, provider, destination, onStep } = options;
  return messageHandler({
    routes: [
      on(OrderCreated, async (order, ctx) => {
        // One charge per order message, however often it is delivered; `key` goes to the
        // provider for the one window the ledger cannot close (charged, then a crash before
        // the record).
        const charge = await ctx.once('charge', async (key, step) => {
          const charged = await provider.charge(
            { orderId: order.orderId, amountCents: order.amountCents, currency: order.currency },
            { idempotencyKey: key, signal: step.signal },
          );
          onStep?.('charged', order.orderId);
          return charged;
        });
        await ctx.trx.withSchema(store.schema).table('payments').insert({
          order_id: order.orderId,
          payment_id: charge.paymentId,
          amount_cents: charge.amountCents,
        });
        await ctx.outbox.add(
          PaymentCaptured,
          { orderId: order.orderId, paymentId: charge.paymentId, amountCents: charge.amountCents },
          { destination },
        );
        onStep?.('recorded', order.orderId);
      }),
    ],
  });
}
