import type { FastifyInstance, FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { ErrorLogging, IdempotencyContext, IdempotencyOptions } from '../engine/options';
import { IDEMPOTENCY_KEYS, resolveRoute } from '../engine/resolve-options';
import { rejectUnknownOptions } from '@justonce/core/transport';
import { IdempotencyContextError } from '../errors/idempotency-context-error';
import { contextOf, routeHooks } from './hooks';

/** Options of one Fastify route (`config: { idempotency }`), or the plugin's defaults. */
export type FastifyIdempotencyOptions = IdempotencyOptions<FastifyRequest> & ErrorLogging;

/**
 * The plugin's options: defaults for every idempotent route (usually `operations` and
 * `scope`); each route's `config.idempotency` adds to them and overrides them, key by key.
 */
export type IdempotencyPluginOptions = Partial<FastifyIdempotencyOptions>;

/**
 * Makes the routes whose `config` has `idempotency` idempotent by their `Idempotency-Key`
 * header. Register it before those routes; it applies to the whole application (it is not
 * encapsulated), and routes without `config.idempotency` are left alone.
 *
 * ```ts
 * await app.register(idempotencyPlugin, { operations, scope: (request) => request.headers['x-client-id'] as string });
 * app.post('/orders', { config: { idempotency: { operation: 'create-order' } } }, async (request, reply) => {
 *   const [order] = await request.idempotency.trx('orders').insert(request.body).returning('*');
 *   return reply.code(201).send(order);
 * });
 * ```
 *
 * The handler runs inside the business transaction (`request.idempotency.trx`). Its reply
 * is held in the `onSend` hook until the operation record and the transaction commit, then
 * sent. A duplicate gets the stored reply with `Idempotent-Replayed: true` from the
 * `preHandler` hook, and the handler does not run. A thrown error rolls the transaction
 * back and leaves the key free for a retry; the reply of Fastify's error handler is then
 * replaced by a problem that tells nothing of the error (500, or the error's own 4xx), the
 * error logged through `logger`. Errors before the handler (the body parser's, schema
 * validation) stay Fastify's to answer. Each route's options are validated when the route
 * is added.
 */
async function idempotencyPluginFunction(
  fastify: FastifyInstance,
  defaults: IdempotencyPluginOptions,
): Promise<void> {
  rejectUnknownOptions(defaults, IDEMPOTENCY_KEYS, 'idempotencyPlugin');
  fastify.decorateRequest('idempotency', {
    getter(this: FastifyRequest): IdempotencyContext {
      const context = contextOf(this);
      if (context === undefined) {
        throw new IdempotencyContextError(
          'give the route config.idempotency, and register idempotencyPlugin before the route',
        );
      }
      return context;
    },
  });
  fastify.addHook('onRoute', (routeOptions) => {
    const own = routeOptions.config?.idempotency;
    if (own === undefined) return;
    const where = `idempotencyPlugin (route ${String(routeOptions.method)} ${routeOptions.url})`;
    const route = resolveRoute<FastifyRequest>({ ...defaults, ...own }, where);
    const hooks = routeHooks(route);
    routeOptions.preHandler = [...asList(routeOptions.preHandler), hooks.preHandler];
    routeOptions.onSend = [...asList(routeOptions.onSend), hooks.onSend];
    routeOptions.onError = [...asList(routeOptions.onError), hooks.onError];
  });
}

function asList<T>(value: T | readonly T[] | undefined): T[] {
  if (value === undefined) return [];
  return Array.isArray(value) ? [...(value as readonly T[])] : [value as T];
}

/** The plugin, not encapsulated: its hooks and decorator reach routes added after it anywhere. */
export const idempotencyPlugin: FastifyPluginAsync<IdempotencyPluginOptions> = Object.assign(
  idempotencyPluginFunction,
  {
    [Symbol.for('skip-override')]: true,
    [Symbol.for('fastify.display-name')]: '@justonce/http',
  },
);
