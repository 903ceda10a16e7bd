import { ConfigurationError } from '../errors/configuration-error';
import { isJustonceError, type JustonceError } from '../errors/justonce-error';
import type { BulkDone, BulkFailure, BulkOptions, BulkResult } from './types';

/**
 * Whether `error`, thrown by a bulk action on one item, is that item's refusal (it counts as
 * failed and the run goes on): a justonce error that is not retriable. A retriable one (the
 * store timed out or is unavailable) or any other error is an outage that every remaining
 * item would run into: it stops the run.
 */
function isRefusal(error: unknown): error is JustonceError {
  return isJustonceError(error) && !error.retriable;
}

function isIterable(value: unknown): value is Iterable<string> | AsyncIterable<string> {
  if (typeof value !== 'object' || value === null) return false;
  const it = value as Partial<Record<symbol, unknown>>;
  return (
    typeof it[Symbol.iterator] === 'function' || typeof it[Symbol.asyncIterator] === 'function'
  );
}

/**
 * `admin.bulk`: `act` on each id in turn; `false`, `null` or a refusal fails the item, anything
 * else thrown stops the run (see `Admin.bulk`). A bad argument is a `ConfigurationError`
 * before any item. @internal
 */
export async function runBulk<Result>(
  ids: Iterable<string> | AsyncIterable<string>,
  act: (id: string) => Promise<Result>,
  options: BulkOptions<Exclude<Result, false | null>> = {},
): Promise<BulkResult<Exclude<Result, false | null>>> {
  if (typeof ids === 'string' || !isIterable(ids)) {
    throw new ConfigurationError('bulk takes the ids as an array or another iterable of strings');
  }
  if (typeof act !== 'function')
    throw new ConfigurationError('bulk takes the action as a function');
  const { onItem } = options;
  if (onItem !== undefined && typeof onItem !== 'function') {
    throw new ConfigurationError('bulk: onItem must be a function');
  }
  const done: BulkDone<Exclude<Result, false | null>>[] = [];
  const failed: BulkFailure[] = [];
  for await (const id of ids) {
    let outcome: BulkDone<Exclude<Result, false | null>> | BulkFailure;
    try {
      const result = await act(id);
      outcome =
        result === false || result === null
          ? { id }
          : { id, result: result as Exclude<Result, false | null> };
    } catch (error) {
      if (!isRefusal(error)) throw error;
      outcome = { id, error };
    }
    if ('result' in outcome) done.push(outcome);
    else failed.push(outcome);
    onItem?.(outcome);
  }
  return { done, failed };
}
