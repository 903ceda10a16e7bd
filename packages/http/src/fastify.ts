/**
 * @justonce/http/fastify — the Fastify plugin: `config: { idempotency }` on a route makes
 * it idempotent by its `Idempotency-Key` header.
 *
 * @packageDocumentation
 */
import type { FastifyRequest } from 'fastify';
import type { IdempotencyContext } from './engine/options';
import type { FastifyIdempotencyOptions } from './fastify/plugin';

export { idempotencyPlugin } from './fastify/plugin';

/**
 * `request.idempotency` typed for the route's operations: `Tx` is the transaction type of
 * their `transactions` adapter (Drizzle's, Kysely's, …), where `request.idempotency.trx` is
 * typed as a knex transaction.
 *
 * @example
 * ```ts
 * const { trx } = idempotencyOf<DrizzleTransaction<typeof db>>(request);
 * await trx.insert(orders).values(order);
 * ```
 */
export function idempotencyOf<Tx>(request: FastifyRequest): IdempotencyContext<Tx> {
  return request.idempotency as unknown as IdempotencyContext<Tx>;
}
export type { FastifyIdempotencyOptions, IdempotencyPluginOptions } from './fastify/plugin';
export type { IdempotencyContext } from './engine/options';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Makes the route idempotent (see `idempotencyPlugin`); merged over the plugin's options. */
    idempotency?: Partial<FastifyIdempotencyOptions>;
  }
  interface FastifyRequest {
    /**
     * The business transaction and key of an idempotent route's request. Throws
     * `IdempotencyContextError` on a route without `config.idempotency`.
     */
    readonly idempotency: IdempotencyContext;
  }
}
