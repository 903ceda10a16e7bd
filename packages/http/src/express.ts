/**
 * @justonce/http/express — the Express middleware: `idempotency(options)` makes the rest of
 * the route idempotent by its `Idempotency-Key` header; `idempotencyContext(res)` gives the
 * handler its transaction.
 *
 * @packageDocumentation
 */
export { idempotency, idempotencyContext } from './express/middleware';
export type { IdempotencyContext, IdempotencyOptions } from './engine/options';
