import {
  applyDecorators,
  createParamDecorator,
  SetMetadata,
  UseInterceptors,
  type ExecutionContext,
} from '@nestjs/common';
import { IdempotencyContextError } from '@justonce/http';
import type { IdempotentRequest } from '../options/types';
import { contextOf, IdempotencyInterceptor } from './interceptor';
import { IDEMPOTENT_METADATA, type IdempotentOptions } from './routes';

/**
 * Makes a route idempotent by its `Idempotency-Key` header, with `@justonce/http`'s engine
 * and the module's operations: the first request with a key runs the handler in the
 * business transaction (`@IdempotencyTransaction()`), its response is stored with the
 * operation record in that transaction and sent after the commit; a repeat gets the stored
 * status, `content-type` and `replayHeaders`, and the exact body, with
 * `Idempotent-Replayed: true`. Problems are `application/problem+json`: 400 (key missing or
 * malformed), 401 (`scope` found no client), 409 (the first still runs), 422 (the key was
 * used for another request). Works on Nest's Express and Fastify platforms.
 *
 * ```ts
 * @Post('orders')
 * @Idempotent({ operation: 'place-order' })
 * async place(@Body() body: NewOrder, @IdempotencyTransaction() trx: KnexTransaction) {
 *   const [order] = await trx('orders').insert(body).returning('*');
 *   await this.outbox.add(trx, OrderPlaced, order);
 *   return order;
 * }
 * ```
 *
 * A handler that throws rolls its transaction back, leaves the key free for a retry, and
 * Nest's exception filters answer as usual. Options are validated at boot.
 */
export function Idempotent<Req = IdempotentRequest>(
  options: IdempotentOptions<Req>,
): MethodDecorator {
  return applyDecorators(
    SetMetadata(IDEMPOTENT_METADATA, options),
    UseInterceptors(IdempotencyInterceptor),
  );
}

function idempotency(
  where: string,
  ctx: ExecutionContext,
): NonNullable<ReturnType<typeof contextOf>> {
  const context = contextOf(ctx.switchToHttp().getRequest<object>());
  if (context === undefined) {
    throw new IdempotencyContextError(`${where} is only available in a route marked @Idempotent`);
  }
  return context;
}

/**
 * The business transaction of an `@Idempotent` route's request: a `Knex.Transaction`, or
 * the transaction of the module's `transactions` adapter (name its type on the parameter).
 * Write through it, and add outbox events in it; it commits with the stored response.
 * Throws `IdempotencyContextError` on a route without `@Idempotent`.
 */
export const IdempotencyTransaction = createParamDecorator(
  (_data: unknown, ctx: ExecutionContext) => idempotency('@IdempotencyTransaction()', ctx).trx,
);

/**
 * The `Idempotency-Key` of an `@Idempotent` route's request; `undefined` when the route's
 * key is optional and the request has none.
 */
export const IdempotencyKey = createParamDecorator(
  (_data: unknown, ctx: ExecutionContext) => idempotency('@IdempotencyKey()', ctx).key,
);
