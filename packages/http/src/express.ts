/**
 * @justonce/http/express — the Express middleware: `idempotency(options)` makes the rest of
 * the route idempotent by its `Idempotency-Key` header; `idempotencyContext(res)` gives the
 * handler its transaction; `idempotencyErrorHandler()` answers errors with problems that tell
 * nothing of them.
 *
 * @packageDocumentation
 */
export { idempotency, idempotencyContext } from './express/middleware';
export { idempotencyErrorHandler } from './express/error-handler';
export type { IdempotencyErrorHandlerOptions } from './express/error-handler';
export type { ErrorLogging, IdempotencyContext, IdempotencyOptions } from './engine/options';
