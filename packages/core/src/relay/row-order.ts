import type { ClaimedRow } from './sql/claimed-row';

/** True if row id `a` is greater than row id `b` (both decimal, without leading zeros). */
export function idAfter(a: string, b: string): boolean {
  return a.length !== b.length ? a.length > b.length : a > b;
}

/** Orders rows by ascending row id. @internal */
export function ascendingId(a: ClaimedRow, b: ClaimedRow): number {
  return a.id === b.id ? 0 : idAfter(a.id, b.id) ? 1 : -1;
}

/** True if the rows come in strictly ascending id order. */
export function idsAscending(rows: readonly ClaimedRow[]): boolean {
  for (let i = 1; i < rows.length; i += 1) {
    if (!idAfter(rows[i]!.id, rows[i - 1]!.id)) return false;
  }
  return true;
}
