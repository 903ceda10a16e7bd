import { isJustonceError } from '@justonce/core';

/** What a bulk action did. */
export interface BulkResult {
  readonly n: number;
  readonly failed: number;
}

/**
 * Runs `act` on each id in turn. A result of `false` or `null` (nothing to change) and a
 * justonce error (gone, wrong state, no destination) count as failures; anything else, such
 * as the store being down, stops the batch and is reported.
 */
export async function eachId(
  ids: readonly string[],
  act: (id: string) => Promise<unknown>,
): Promise<BulkResult> {
  let n = 0;
  let failed = 0;
  for (const id of ids) {
    try {
      const result = await act(id);
      if (result === false || result === null) failed++;
      else n++;
    } catch (error) {
      if (!isJustonceError(error)) throw error;
      failed++;
    }
  }
  return { n, failed };
}

/** What an action on a single row did: done, or nothing to change. */
export function singleResult(done: boolean): BulkResult {
  return done ? { n: 1, failed: 0 } : { n: 0, failed: 1 };
}
