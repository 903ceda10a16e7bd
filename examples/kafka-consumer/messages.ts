// The one message type of the example, shared by the producer and the consumer.
import { defineMessage } from '@justonce/core';
import { z } from 'zod';

export const OrderPlaced = defineMessage({
  type: 'order.placed', // the `type` header the consumer routes by
  schema: z.object({ id: z.string().min(1), cents: z.number().int() }),
  key: (order) => order.id,
});
