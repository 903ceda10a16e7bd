/** Counting one table's rows against the orders the API accepted: how many, doubled, lost. */

/** One table, counted by order id. */
export interface Tally {
  /** Rows. */
  readonly rows: number;
  /** Order ids with more than one row: the effect happened twice. */
  readonly doubles: number;
  /** Accepted orders with no row: the effect never happened. */
  readonly lost: number;
  /** Order ids that are no accepted order. */
  readonly unknown: number;
}

/** Counts `ids` (one per row) against the `accepted` order ids. */
export function tally(ids: readonly string[], accepted: ReadonlySet<string>): Tally {
  const seen = new Map<string, number>();
  for (const id of ids) seen.set(id, (seen.get(id) ?? 0) + 1);
  let doubles = 0;
  let unknown = 0;
  for (const [id, count] of seen) {
    if (count > 1) doubles += 1;
    if (!accepted.has(id)) unknown += 1;
  }
  let lost = 0;
  for (const id of accepted) if (!seen.has(id)) lost += 1;
  return { rows: ids.length, doubles, lost, unknown };
}

/** The `p`-th percentile (0-100) of `values`, nearest rank; 0 when there are none. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)));
  return sorted[rank - 1] ?? 0;
}
