/** The orders API's request and response bodies, shared by the service and its clients. */
import { z } from 'zod';

/** The body of `POST /orders`. */
export const NewOrder = z.object({
  customerId: z.string().min(1).max(100),
  amountCents: z.number().int().positive(),
  currency: z.enum(['EUR', 'USD', 'GBP']),
});
export type NewOrder = z.infer<typeof NewOrder>;

/** An order, as `POST /orders` answers it. */
export const Order = NewOrder.extend({
  orderId: z.uuid(),
  status: z.literal('created'),
  createdAt: z.string(),
});
export type Order = z.infer<typeof Order>;
