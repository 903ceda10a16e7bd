import { ConfigurationError, type KnexTransaction } from '@justonce/core';
import { bodyFromBytes, type RequestView } from '../engine/fingerprint';
import { errorResponse } from '../engine/error-response';
import { handleRequest } from '../engine/handle-request';
import type { ErrorLogging, IdempotencyContext, IdempotencyOptions } from '../engine/options';
import { resolveRoute } from '../engine/resolve-options';
import { IDEMPOTENCY_KEY_HEADER, type HeaderPair, type HeldResponse } from '../engine/response';

/** A Fetch API handler made idempotent by {@link idempotent}. */
export type IdempotentHandler<Tx = KnexTransaction> = (
  request: Request,
  context: IdempotencyContext<Tx>,
) => Promise<Response>;

/**
 * Makes a Fetch API handler (`Request` in, `Response` out) idempotent by its
 * `Idempotency-Key` header. The handler runs inside the business transaction
 * (`context.trx`); its response is read whole, stored with the operation record in that
 * transaction, and returned only after the commit. A duplicate gets the stored response
 * with `Idempotent-Replayed: true` and the handler does not run. Errors are
 * `application/problem+json`: 400 (key missing or malformed), 401 (no scope), 409 (the
 * first request is still running), 422 (the key was used for another request).
 *
 * A handler that throws rolls its transaction back, leaves the key free for a retry, and
 * gets a problem that tells nothing of the error: 500 (its `instance` logged with the error
 * through `logger`), or the error's own 4xx. Anything else that fails (the store, the
 * commit) makes the returned function reject. Options are validated here, at
 * construction ({@link IdempotencyOptions}). Any runtime with Fetch API requests can serve
 * the result: Hono, Next.js route handlers, Deno, Bun, or node:http via
 * {@link toNodeListener}.
 *
 * ```ts
 * const createOrder = idempotent(
 *   { operations, operation: 'create-order', scope: (request) => request.headers.get('x-client-id') ?? undefined },
 *   async (request, { trx }) => {
 *     const [order] = await trx('orders').insert(await request.json()).returning('*');
 *     return Response.json(order, { status: 201 });
 *   },
 * );
 * ```
 */
export function idempotent<Tx = KnexTransaction>(
  options: IdempotencyOptions<Request, Tx> & ErrorLogging,
  handler: IdempotentHandler<Tx>,
): (request: Request) => Promise<Response> {
  // The engine only passes the operations' own transactions through: of type Tx.
  const route = resolveRoute(
    options as unknown as IdempotencyOptions<Request> & ErrorLogging,
    'idempotent',
  );
  if (typeof handler !== 'function') {
    throw new ConfigurationError('idempotent needs a handler function', {
      handler: typeof handler,
    });
  }
  return async (request) => {
    // The engine reads a copy (for the fingerprint, and as the scope's and a fingerprint
    // function's request), so the handler still gets a body it can read.
    const copy = request.clone();
    const outcome = await handleRequest(
      route,
      {
        request: copy,
        view: requestView(copy),
        keyField: request.headers.get(IDEMPOTENCY_KEY_HEADER) ?? undefined,
      },
      async (context) =>
        holdResponse(await handler(request, context as unknown as IdempotencyContext<Tx>)),
    );
    if (outcome.kind === 'threw') {
      return toResponse(errorResponse(outcome.error, route.logger, { operation: route.operation }));
    }
    return toResponse(outcome.response);
  };
}

function requestView(request: Request): RequestView {
  const url = new URL(request.url);
  return {
    method: request.method.toUpperCase(),
    target: `${url.pathname}${url.search}`,
    header: (name) => request.headers.get(name) ?? undefined,
    body: async () =>
      bodyFromBytes(
        new Uint8Array(await request.arrayBuffer()),
        request.headers.get('content-type') ?? undefined,
      ),
  };
}

/** Reads a handler's response whole, so it can be stored before anything is sent. */
async function holdResponse(response: Response): Promise<HeldResponse> {
  const body = new Uint8Array(await response.arrayBuffer());
  return { status: response.status, headers: headerPairsOf(response.headers), body };
}

/** Every header of a Fetch `Headers`, `set-cookie` values apart (they cannot be joined). */
function headerPairsOf(headers: Headers): HeaderPair[] {
  const pairs: HeaderPair[] = [];
  headers.forEach((value, name) => {
    if (name !== 'set-cookie') pairs.push([name, value]);
  });
  for (const cookie of headers.getSetCookie()) pairs.push(['set-cookie', cookie]);
  return pairs;
}

/** Statuses whose response has no body (Fetch refuses one). */
const NULL_BODY_STATUSES = new Set([101, 103, 204, 205, 304]);

function toResponse(response: HeldResponse): Response {
  const headers = new Headers();
  for (const [name, value] of response.headers) headers.append(name, value);
  const body = NULL_BODY_STATUSES.has(response.status) ? null : response.body;
  return new Response(body, { status: response.status, headers });
}
