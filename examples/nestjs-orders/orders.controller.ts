/**
 * `POST /orders`, as the flagship's Express app answers it (orders/app.ts): an
 * `Idempotency-Key` header is required, a body that is no order gets 400 (stored, so a retry
 * gets it too), an order gets 201 with the order. `@Idempotent` reserves the key and opens the
 * Drizzle transaction; the order row and its `order.created` event are written in it, so the
 * order, its event and the stored answer commit together or not at all.
 */
import {
  Body,
  Catch,
  Controller,
  HttpException,
  Inject,
  Post,
  Res,
  UseFilters,
  type ArgumentsHost,
  type ExceptionFilter,
} from '@nestjs/common';
import type { Response } from 'express';
import type { Outbox } from '@justonce/core';
import { Idempotent, IdempotencyKey, IdempotencyTransaction, InjectOutbox } from '@justonce/nestjs';
import { OrderCreated } from '../order-service/messages';
import { orderCreated, readOrder, type InvalidOrder } from '../order-service/orders/app';
import type { Order } from '../order-service/orders/contract';
import type { OrdersTable, OrdersTransaction } from './schema';

/** The injection token of the orders table (an {@link OrdersTable}). */
export const ORDERS_TABLE = 'orders:table';
/** The injection token of the Kafka topic `order.created` goes to (a string). */
export const ORDER_TOPIC = 'orders:topic';

/**
 * A thrown error is not stored (the transaction rolled back, the key is free for the retry);
 * it gets the flagship's 500 body. Nest's own HTTP errors keep their status.
 */
@Catch()
export class OrdersErrorFilter implements ExceptionFilter {
  catch(error: unknown, host: ArgumentsHost): void {
    const res = host.switchToHttp().getResponse<Response>();
    if (error instanceof HttpException) {
      res.status(error.getStatus()).json(error.getResponse());
      return;
    }
    console.error('POST /orders failed:', error);
    res.status(500).json({ title: 'internal error' });
  }
}

@Controller('orders')
@UseFilters(OrdersErrorFilter)
export class OrdersController {
  constructor(
    @InjectOutbox() private readonly outbox: Outbox<OrdersTransaction>,
    @Inject(ORDERS_TABLE) private readonly orders: OrdersTable,
    @Inject(ORDER_TOPIC) private readonly topic: string,
  ) {}

  // A real API scopes keys by the authenticated client; this one has a single client.
  @Post()
  @Idempotent({ operation: 'create-order', scope: 'shared' })
  async create(
    @Body() body: unknown,
    @IdempotencyTransaction() tx: OrdersTransaction,
    @IdempotencyKey() key: string | undefined,
    @Res({ passthrough: true }) res: Response,
  ): Promise<Order | InvalidOrder> {
    const read = readOrder(body);
    if ('invalid' in read) {
      res.status(400);
      return read.invalid;
    }
    const { order } = read;
    // The route requires the header, so the interceptor never runs this without a key.
    if (key === undefined) throw new Error('POST /orders ran without an Idempotency-Key');
    await tx.insert(this.orders).values({
      orderId: order.orderId,
      idempotencyKey: key,
      customerId: order.customerId,
      amountCents: order.amountCents,
      currency: order.currency,
    });
    await this.outbox.add(tx, OrderCreated, orderCreated(order), { destination: this.topic });
    return order; // 201, stored with the key in the same transaction, sent after the commit
  }
}
