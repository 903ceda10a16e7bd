import type { IncomingMessage, ServerResponse } from 'node:http';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { KnexTransaction } from '@justonce/core';
import { bodyFromBytes, type RequestBody, type RequestView } from '../engine/fingerprint';
import { errorResponse } from '../engine/error-response';
import { handleRequest, type Outcome } from '../engine/handle-request';
import type { ErrorLogging, IdempotencyContext, IdempotencyOptions } from '../engine/options';
import { resolveRoute, type ResolvedRoute } from '../engine/resolve-options';
import { IDEMPOTENCY_KEY_HEADER, type HeldResponse } from '../engine/response';
import { IdempotencyContextError } from '../errors/idempotency-context-error';
import { holdResponse, type ResponseHold } from './hold-response';

const contexts = new WeakMap<ServerResponse, IdempotencyContext>();
/** The hold of a response whose handler runs, until the engine has decided. */
const holds = new WeakMap<ServerResponse, ResponseHold>();

/**
 * For `idempotencyErrorHandler`: what became of an error that reached it for `res`.
 * `handler`: the handler was running and threw it (the middleware now rolls back and
 * answers); `held`: the handler had already answered (its held response goes out as
 * decided); `none`: no handler of an idempotent route is running for `res`. @internal
 */
export function takeHandlerError(res: ServerResponse, error: unknown): 'handler' | 'held' | 'none' {
  const hold = holds.get(res);
  if (hold === undefined) return 'none';
  return hold.fail(error) ? 'handler' : 'held';
}

/**
 * Express middleware that makes the rest of the route idempotent by its `Idempotency-Key`
 * header. Put it after the body parser and before the handler:
 *
 * ```ts
 * app.post('/orders', express.json(), idempotency(options), async (req, res) => {
 *   const { trx } = idempotencyContext(res);
 *   const [order] = await trx('orders').insert(req.body).returning('*');
 *   res.status(201).json(order);
 * });
 * ```
 *
 * The handler runs inside the business transaction (`idempotencyContext(res).trx`). What it
 * writes to `res` is held in memory, stored with the operation record in that transaction,
 * and sent only after the commit. A duplicate gets the stored response with
 * `Idempotent-Replayed: true` and the handler does not run. A thrown error goes to Express's
 * error handlers as usual: put `idempotencyErrorHandler()` after the handler, and it is
 * answered with a problem that tells nothing of it (500, or the error's own 4xx), the
 * transaction rolled back and the key free for a retry. Without it, the response another
 * error handler makes is held like any other (a 5xx rolls back and leaves the key free).
 * Options are validated here, at construction.
 */
export function idempotency<Tx = KnexTransaction>(
  options: IdempotencyOptions<Request, Tx> & ErrorLogging,
): RequestHandler {
  // The engine only passes the operations' own transactions through: of type Tx.
  const route = resolveRoute(
    options as unknown as IdempotencyOptions<Request> & ErrorLogging,
    'idempotency',
  );
  return (req, res, next) => serve(route, req, res, next);
}

/**
 * The idempotency context of the request `res` answers: its business transaction and key.
 * Throws {@link IdempotencyContextError} when the `idempotency` middleware did not run
 * before the handler. `Tx` is the transaction type of the route's operations (their
 * `transactions` adapter): a knex transaction unless you gave another.
 */
export function idempotencyContext<Tx = KnexTransaction>(res: Response): IdempotencyContext<Tx> {
  const context = contexts.get(res);
  if (context === undefined) {
    throw new IdempotencyContextError(
      'put the idempotency(...) middleware of @justonce/http/express before this handler',
    );
  }
  return context as IdempotencyContext<Tx>;
}

async function serve(
  route: ResolvedRoute<Request>,
  req: Request,
  res: Response,
  next: NextFunction,
): Promise<void> {
  let hold: ResponseHold | undefined;
  let outcome: Outcome;
  try {
    outcome = await handleRequest(
      route,
      {
        request: req,
        view: requestView(req),
        keyField: req.headersDistinct[IDEMPOTENCY_KEY_HEADER],
      },
      (context, signal) => {
        contexts.set(res, context);
        hold = holdResponse(res);
        holds.set(res, hold);
        next();
        return hold.until(signal);
      },
    );
  } catch (error) {
    holds.delete(res);
    hold?.discard();
    next(error);
    return;
  }
  holds.delete(res);
  switch (outcome.kind) {
    case 'respond':
      // A shed request (a spent retry budget) may have run the handler: its response goes.
      hold?.discard();
      send(res, outcome.response);
      return;
    case 'committed':
    case 'rolled-back':
      hold?.release();
      return;
    case 'threw':
      // Only idempotencyErrorHandler hands a thrown error to the hold: it is answered here.
      hold?.discard();
      send(res, errorResponse(outcome.error, route.logger, { operation: route.operation }));
      return;
  }
}

function requestView(req: Request): RequestView {
  return {
    method: req.method.toUpperCase(),
    target: req.originalUrl,
    header: (name) => {
      const value = req.headers[name.toLowerCase()];
      return Array.isArray(value) ? value.join(', ') : value;
    },
    body: () => requestBody(req),
  };
}

/**
 * The body as the body parser left it in `req.body`. With no parser before the middleware,
 * the raw body is read here and left in `req.body` as a Buffer (as `express.raw()` would).
 */
async function requestBody(req: Request): Promise<RequestBody> {
  const contentType = req.headers['content-type'];
  const body: unknown = req.body;
  if (body === undefined || body === null) {
    if (!hasBody(req)) return { kind: 'none' };
    const bytes = await readAll(req);
    req.body = bytes;
    return bodyFromBytes(bytes, contentType);
  }
  if (Buffer.isBuffer(body)) return bodyFromBytes(body, contentType);
  if (typeof body === 'string') return bodyFromBytes(Buffer.from(body, 'utf8'), contentType);
  return { kind: 'json', value: body };
}

function hasBody(req: IncomingMessage): boolean {
  if (req.readableEnded) return false;
  const length = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

async function readAll(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req)
    chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(`${chunk}`));
  return Buffer.concat(chunks);
}

/** Sends a response the handler did not make (a problem or a replay) on `res`. @internal */
export function send(res: ServerResponse, response: HeldResponse): void {
  const grouped = new Map<string, string[]>();
  for (const [name, value] of response.headers)
    grouped.set(name, [...(grouped.get(name) ?? []), value]);
  res.statusCode = response.status;
  for (const [name, values] of grouped)
    res.setHeader(name, values.length === 1 ? (values[0] ?? '') : values);
  res.end(Buffer.from(response.body));
}
