/**
 * The messages the services exchange, declared once and shared by producer and consumers:
 * the `type` header routes them, the zod schema checks them on both sides (outbox.add
 * refuses a payload that does not match it; a consumer dead-letters a body that does not),
 * and the key keeps one order's messages in order.
 */
import { defineMessage } from '@justonce/core';
import { z } from 'zod';

/** An order was accepted: the orders service publishes it to Kafka. */
export const OrderCreated = defineMessage({
  type: 'order.created',
  schema: z.object({
    orderId: z.uuid(),
    customerId: z.string().min(1),
    amountCents: z.number().int().positive(),
    currency: z.string().length(3),
  }),
  key: (order) => order.orderId,
});

/** An order was paid: the payments service publishes it to RabbitMQ. */
export const PaymentCaptured = defineMessage({
  type: 'payment.captured',
  schema: z.object({
    orderId: z.uuid(),
    paymentId: z.string().min(1),
    amountCents: z.number().int().positive(),
  }),
  key: (payment) => payment.orderId,
});
