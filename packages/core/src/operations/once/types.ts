import type { StandardSchemaV1 } from '@standard-schema/spec';
import type { OperationContext } from '../types';

/**
 * The effect of one `ctx.once` step. `key` is the step's idempotency key (see
 * docs/side-effects.md for its format): pass it to the remote API, which closes the one window
 * the ledger cannot (the effect succeeded remotely and the process died before its record was
 * written; the effect then runs again with the same key). `ctx` is the step's own operation
 * context: its lease (`signal`, `extendLease`) and its attempt. The result must be JSON data;
 * it is stored and replayed as its JSON round trip.
 */
export type OnceEffect<R> = (key: string, ctx: OperationContext) => Promise<R> | R;

/** Options of one `ctx.once` step. */
export interface OnceOptions<R, O = R> {
  /**
   * A Standard Schema (zod, valibot, arktype, …) the result is checked with, first run or
   * replay; `once` resolves to the schema's output. A result that fails it rejects with
   * `OnceResultError` and the record is kept.
   */
  readonly schema?: StandardSchemaV1<R, O>;
}

/**
 * Runs a non-transactional side effect once for this message (or operation, or request) and
 * step, and records its result outside the handler's transaction; a redelivery replays the
 * result instead of calling `fn` again. Steps are named 1–100 characters; several steps per
 * handler are recorded separately. See docs/side-effects.md for every failure ordering.
 *
 * ```ts
 * const charge = await ctx.once('charge', (key) => psp.charge(order, { idempotencyKey: key }));
 * ```
 */
export type Once = <R, O = R>(
  step: string,
  fn: OnceEffect<R>,
  options?: OnceOptions<R, O>,
) => Promise<O>;
