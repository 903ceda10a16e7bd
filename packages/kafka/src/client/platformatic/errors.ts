import { errorChain } from '@justonce/core';

/** @platformatic/kafka's error codes for a connection that failed or a request unanswered. */
const UNREACHABLE_CODES: ReadonlySet<string> = new Set(['PLT_KFK_NETWORK', 'PLT_KFK_TIMEOUT']);

/**
 * True when @platformatic/kafka failed because a broker could not be reached or did not
 * answer in time (its `NetworkError` or `TimeoutError`, anywhere in the cause chain or among
 * the errors of its `MultipleErrors`). @internal
 */
export function isUnreachable(error: unknown): boolean {
  for (const e of errorChain(error)) {
    if (typeof e.code === 'string' && UNREACHABLE_CODES.has(e.code)) return true;
  }
  return false;
}
