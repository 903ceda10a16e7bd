/**
 * @justonce/http/fastify — the Fastify plugin: `config: { idempotency }` on a route makes
 * it idempotent by its `Idempotency-Key` header.
 *
 * @packageDocumentation
 */
import type { IdempotencyContext } from './engine/options';
import type { FastifyIdempotencyOptions } from './fastify/plugin';

export { idempotencyPlugin } from './fastify/plugin';
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
