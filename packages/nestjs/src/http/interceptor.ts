import { ConfigurationError } from '@justonce/core';
import {
  Inject,
  Injectable,
  type CallHandler,
  type ExecutionContext,
  type NestInterceptor,
} from '@nestjs/common';
import { handleRequest, type HeldResponse, type IdempotencyContext } from '@justonce/http';
import { defer, type Observable } from 'rxjs';
import {
  bodyOf,
  holdResponse,
  keyField,
  requestView,
  responseSent,
  writeHead,
  type PlatformRequest,
  type PlatformResponse,
} from './platform';
import { IdempotencyRoutes, type RouteHandler } from './routes';

const contexts = new WeakMap<object, IdempotencyContext>();

/** The idempotency context of a request in its `@Idempotent` handler, if any. @internal */
export function contextOf(request: object): IdempotencyContext | undefined {
  return contexts.get(request);
}

/**
 * The interceptor behind `@Idempotent`, on `@justonce/http`'s engine: it reads the key,
 * scope and fingerprint, runs the rest of the route (pipes, handler, inner interceptors) in
 * `operations.runInTransaction`, holds the handler's response until the commit, and answers
 * duplicates with the stored response and problems (400, 401, 409, 422) itself. The body it
 * sends is the exact bytes it stored, on Express and Fastify alike.
 */
@Injectable()
export class IdempotencyInterceptor implements NestInterceptor {
  constructor(@Inject(IdempotencyRoutes) private readonly routes: IdempotencyRoutes) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    if (context.getType() !== 'http') return next.handle();
    return defer(() => this.serve(context, next));
  }

  private async serve(context: ExecutionContext, next: CallHandler): Promise<unknown> {
    const handler = context.getHandler() as RouteHandler;
    const where = `${context.getClass().name}.${handler.name}`;
    const route = this.routes.routeOf(handler, where);
    const http = context.switchToHttp();
    const request = http.getRequest<PlatformRequest>();
    const response = http.getResponse<PlatformResponse>();
    const outcome = await handleRequest<object>(
      route,
      { request, view: requestView(request), keyField: keyField(request) },
      (idempotency, signal) => {
        contexts.set(request, idempotency);
        return runHandler(next, signal, async (value) => {
          if (responseSent(response)) {
            throw new ConfigurationError(
              `@Idempotent on ${where}: the handler sent the response itself; use @Res({ passthrough: true }) and return the body`,
            );
          }
          return holdResponse(value, request, response);
        });
      },
    );
    if (outcome.kind === 'threw') throw outcome.error;
    // The handler's own response has its status and headers on the response already.
    if (outcome.kind === 'respond') writeHead(response, outcome.response);
    return bodyOf(outcome.response);
  }
}

/**
 * Runs the rest of the route and resolves to its response, held; rejects when `signal`
 * aborts first (the operation's lease was lost), leaving the handler's observable.
 */
function runHandler(
  next: CallHandler,
  signal: AbortSignal,
  hold: (value: unknown) => Promise<HeldResponse>,
): Promise<HeldResponse> {
  return new Promise<HeldResponse>((resolve, reject) => {
    let value: unknown;
    const subscription = next.handle().subscribe({
      next: (emitted) => {
        value = emitted;
      },
      error: reject,
      complete: () => hold(value).then(resolve, reject),
    });
    const abort = (): void => {
      subscription.unsubscribe();
      reject(signal.reason);
    };
    if (signal.aborted) abort();
    else signal.addEventListener('abort', abort, { once: true });
  });
}
