import { JustonceError, hasErrorCode } from '@justonce/core';

/** Code of {@link IdempotencyContextError}. */
export const IDEMPOTENCY_CONTEXT_MISSING = 'IDEMPOTENCY_CONTEXT_MISSING';

/**
 * A handler asked for its idempotency context (`idempotencyContext(res)` in Express,
 * `request.idempotency` in Fastify) on a request that the idempotency middleware or plugin
 * did not handle: it is not installed on that route, or it is installed after the handler.
 * A programming error, not retriable.
 */
export class IdempotencyContextError extends JustonceError {
  constructor(where: string) {
    super(IDEMPOTENCY_CONTEXT_MISSING, `no idempotency context on this request: ${where}`, {
      retriable: false,
    });
  }
}

/** True when `value` is an {@link IdempotencyContextError} from any copy of the package. */
export function isIdempotencyContextError(value: unknown): value is IdempotencyContextError {
  return hasErrorCode(value, IDEMPOTENCY_CONTEXT_MISSING);
}
