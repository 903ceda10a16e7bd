import { Inject, Injectable } from '@nestjs/common';
import { resolveRoute, type IdempotencyOptions, type ResolvedRoute } from '@justonce/http';
import { JUSTONCE_CORE, type CoreHandle } from '../core-handle';
import type { IdempotentRequest } from '../options/types';

/**
 * Options of one `@Idempotent` route: `@justonce/http`'s route options, without
 * `operations` (the module's) and `store`, and with `scope` optional (default: the module's
 * `idempotency.scope`). `Req` is the request your platform hands the `scope` and
 * `fingerprint` functions: Express's `Request` or Fastify's `FastifyRequest`.
 */
export type IdempotentOptions<Req = IdempotentRequest> = Omit<
  IdempotencyOptions<Req>,
  'operations' | 'store' | 'scope'
> & {
  readonly scope?: IdempotencyOptions<Req>['scope'];
};

/** The metadata key of a route's `@Idempotent` options. @internal */
export const IDEMPOTENT_METADATA = 'justonce:idempotent';

/** A route handler, as Nest hands it to interceptors. @internal */
export type RouteHandler = (...args: never[]) => unknown;

/**
 * The resolved options of every `@Idempotent` route, by handler: resolved (validated) at
 * boot for the controllers the module finds, or on first use. @internal
 */
@Injectable()
export class IdempotencyRoutes {
  private readonly routes = new Map<RouteHandler, ResolvedRoute<object>>();

  constructor(@Inject(JUSTONCE_CORE) private readonly core: CoreHandle) {}

  /** The route of `handler`; a bad option is a `ConfigurationError` naming `where`. */
  routeOf(handler: RouteHandler, where: string): ResolvedRoute<object> {
    let route = this.routes.get(handler);
    if (route === undefined) {
      const own = Reflect.getMetadata(IDEMPOTENT_METADATA, handler) as
        IdempotentOptions<object> | undefined;
      const { operations, config } = this.core;
      route = resolveRoute<object>(
        {
          ...(config.options.idempotency as Partial<IdempotencyOptions<object>> | undefined),
          ...own,
          // Its transactions adapter opens every request's transaction, keyless ones included.
          operations,
        },
        `@Idempotent on ${where}`,
      );
      this.routes.set(handler, route);
    }
    return route;
  }

  /** Whether `handler` is an `@Idempotent` route. */
  static isIdempotent(handler: unknown): boolean {
    return typeof handler === 'function' && Reflect.hasMetadata(IDEMPOTENT_METADATA, handler);
  }
}
