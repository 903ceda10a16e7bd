/** What an action did, as its notice and JSON answer say: rows changed, rows not. */
export interface BulkResult {
  readonly n: number;
  readonly failed: number;
}

/** What an action on a single row did: done, or nothing to change. */
export function singleResult(done: boolean): BulkResult {
  return done ? { n: 1, failed: 0 } : { n: 0, failed: 1 };
}
