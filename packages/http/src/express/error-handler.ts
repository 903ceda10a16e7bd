import type { ErrorRequestHandler } from 'express';
import type { Logger } from '@justonce/core';
import { optionKeys, rejectUnknownOptions } from '@justonce/core/transport';
import { errorResponse } from '../engine/error-response';
import { loggerOption } from '../engine/resolve-options';
import { send, takeHandlerError } from './middleware';

/** Options of {@link idempotencyErrorHandler}. */
export interface IdempotencyErrorHandlerOptions {
  /**
   * Where the errors it answers itself are logged (those from before or after an
   * idempotent handler; a handler's own error is logged by the route's `logger`).
   * Default: `console.error`.
   */
  readonly logger?: Logger;
}

const KEYS = optionKeys<IdempotencyErrorHandlerOptions>()(['logger']);

/**
 * Express error-handling middleware that answers errors with a problem that tells nothing of
 * them, instead of Express's default page (an HTML stack trace outside production). Put it
 * after the handler of each idempotent route, or after all routes:
 *
 * ```ts
 * app.post('/orders', express.json(), idempotency(options), handler, idempotencyErrorHandler());
 * ```
 *
 * - An error the handler throws (or passes to `next`) while the route's `idempotency`
 *   middleware holds its response: the transaction rolls back, the key stays free for a
 *   retry, and the middleware answers 500 `requestFailed` (its `instance` logged with the
 *   error through the route's `logger`), or the error's own 4xx.
 * - Any other error (the body parser's, such as a malformed JSON body, answered with its
 *   400; the scope function's; the store's): answered the same way here, logged through
 *   this handler's `logger`.
 * - An error once the response was sent, or after the handler answered (the answer already
 *   held goes out as the engine decides): logged, and left to Express (`next`) only when the
 *   response was already sent.
 */
export function idempotencyErrorHandler(
  options: IdempotencyErrorHandlerOptions = {},
): ErrorRequestHandler {
  rejectUnknownOptions(options, KEYS, 'idempotencyErrorHandler');
  const logger = loggerOption(options.logger, 'idempotencyErrorHandler');
  return (error: unknown, req, res, next) => {
    if (res.headersSent) {
      next(error);
      return;
    }
    const taken = takeHandlerError(res, error);
    if (taken === 'handler') return;
    if (taken === 'held') {
      logger.error('an error after the handler had answered; its answer goes out as held', {
        method: req.method,
        error,
      });
      return;
    }
    send(res, errorResponse(error, logger, { method: req.method, path: req.path }));
  };
}
