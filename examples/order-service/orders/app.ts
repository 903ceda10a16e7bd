/**
 * The orders API: `POST /orders` with an `Idempotency-Key` header (required). The
 * idempotency middleware gives the handler the transaction in which the key's record will be
 * written; the order row and its `order.created` event go into that same transaction, so the
 * order, its event and the stored answer commit together or not at all, and a retry of the
 * request gets the stored answer instead of a second order.
 */
import { randomUUID } from 'node:crypto';
import express from 'express';
import {
  createOperations,
  silentLogger,
  type Logger,
  type MessagePayload,
  type Operations,
  type Outbox,
  type Store,
} from '@justonce/core';
import { idempotency, idempotencyContext, idempotencyErrorHandler } from '@justonce/http/express';
import { OrderCreated } from '../messages';
import { NewOrder, type Order } from './contract';

/** Options of {@link createOrdersApp}. */
export interface OrdersAppOptions {
  /** The orders service's store (its own schema). */
  readonly store: Store;
  /** Idempotency records of the API's keys. */
  readonly operations: Operations;
  readonly outbox: Outbox;
  /** The Kafka topic (or queue) `order.created` goes to. */
  readonly topic: string;
  /** Called once the order and its event are written, before the commit; a throw aborts both. */
  readonly onWritten?: (order: Order) => void;
  /** Where errors of the handler are reported. Default: nowhere. */
  readonly onError?: (error: unknown) => void;
}

/**
 * Creates the orders table, on PostgreSQL (PGlite) or MySQL (MariaDB). No unique index on the
 * key, on purpose: a double would show.
 */
export async function createOrdersTables(store: Store): Promise<void> {
  await store.knex.raw(
    store.dialect === 'mysql'
      ? `create table if not exists ${store.names.table('orders')} (
           order_id char(36) primary key,
           idempotency_key varchar(255) not null,
           customer_id varchar(255) not null,
           amount_cents integer not null,
           currency varchar(255) not null,
           created_at datetime(6) not null default current_timestamp(6)
         )`
      : `create table if not exists ${store.names.table('orders')} (
           order_id uuid primary key,
           idempotency_key text not null,
           customer_id text not null,
           amount_cents integer not null,
           currency text not null,
           created_at timestamptz not null default clock_timestamp()
         )`,
  );
}

/**
 * The API's idempotency records: a key whose request died with its process is free again
 * after leaseMs.
 */
export function createOrderKeys(store: Store): Operations {
  return createOperations({ store, leaseMs: 3_000 });
}

/** The 400 body of a `POST /orders` body that is no order. */
export interface InvalidOrder {
  readonly title: 'invalid order';
  readonly issues: readonly unknown[];
}

/**
 * Reads a `POST /orders` body: the order it creates (a fresh id, `created`, now), or the 400
 * body with the body's issues. Shared with the Nest version (examples/nestjs-orders).
 */
export function readOrder(body: unknown): { order: Order } | { invalid: InvalidOrder } {
  const input = NewOrder.safeParse(body);
  if (!input.success) return { invalid: { title: 'invalid order', issues: input.error.issues } };
  return {
    order: {
      orderId: randomUUID(),
      ...input.data,
      status: 'created',
      createdAt: new Date().toISOString(),
    },
  };
}

/**
 * Reads a `POST /orders` body: the order it creates, or `undefined` once it answered 400
 * with the body's issues.
 */
export function acceptOrder(
  body: unknown,
  res: { status(code: number): { json(body: unknown): unknown } },
): Order | undefined {
  const read = readOrder(body);
  if ('invalid' in read) {
    res.status(400).json(read.invalid);
    return undefined;
  }
  return read.order;
}

/** The orders table's row of `order`, created under `idempotencyKey`. */
export function orderRow(order: Order, idempotencyKey: string): Record<string, string | number> {
  return {
    order_id: order.orderId,
    idempotency_key: idempotencyKey,
    customer_id: order.customerId,
    amount_cents: order.amountCents,
    currency: order.currency,
  };
}

/** The `order.created` event of `order`. */
export function orderCreated(order: Order): MessagePayload<typeof OrderCreated> {
  return {
    orderId: order.orderId,
    customerId: order.customerId,
    amountCents: order.amountCents,
    currency: order.currency,
  };
}

/** A logger that reports the errors answered with a 500 to `onError`, and nothing else. */
function errorsTo(onError: ((error: unknown) => void) | undefined): Logger {
  if (onError === undefined) return silentLogger;
  return { ...silentLogger, error: (_message, fields) => onError(fields?.error) };
}

/** The orders API as an Express app. */
export function createOrdersApp(options: OrdersAppOptions): express.Express {
  const { store, operations, outbox, topic } = options;
  const logger = errorsTo(options.onError);
  const app = express();
  app.post(
    '/orders',
    express.json(),
    // A real API scopes keys by the authenticated client; this one has a single client.
    idempotency({ operations, operation: 'create-order', scope: 'shared', logger }),
    async (req, res) => {
      const { trx, key } = idempotencyContext(res);
      const order = acceptOrder(req.body, res);
      if (order === undefined) return;
      // The route requires the header, so the middleware never runs this without a key.
      if (key === undefined) throw new Error('POST /orders ran without an Idempotency-Key');
      try {
        await trx.withSchema(store.schema).table('orders').insert(orderRow(order, key));
        await outbox.add(trx, OrderCreated, orderCreated(order), { destination: topic });
        options.onWritten?.(order);
        res.status(201).json(order);
      } catch (error) {
        // The lease ran out while this ran: the 500 is sent and the transaction rolled back.
        // Thrown now, the error would reach Express's final handler, which prints it.
        if (!res.headersSent) throw error;
        options.onError?.(error);
      }
    },
  );
  // Errors as problem+json that tell nothing of them: a body express.json() cannot parse is
  // a 400 (a client retrying on 5xx would send it forever); a thrown error is a 500, not
  // stored: the transaction rolls back and the key is free for the retry.
  app.use(idempotencyErrorHandler({ logger }));
  return app;
}
