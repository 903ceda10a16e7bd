import type { AdminSelection } from '@justonce/core/admin';
import { parseId } from './parse';

/** Rows on one page of a list. */
export const PAGE_SIZE = 50;

/** The `after` cursor of a list page: a row id, or `undefined` for the first page. */
export function parseAfter(value: string | undefined): string | undefined {
  return value === undefined || value === '' ? undefined : parseId(value, 'after');
}

/** One page of rows. */
export interface ListPage<Row> {
  readonly rows: Row[];
  /** Cursor of the next page, if there may be more. */
  readonly next?: string;
}

/** One page's place in a selection: `PAGE_SIZE + 1` rows after the cursor (if any). */
export function pageLimit(after: string | undefined): { limit: number; after?: string } {
  return after === undefined ? { limit: PAGE_SIZE + 1 } : { limit: PAGE_SIZE + 1, after };
}

/**
 * The page of a selection made with {@link pageLimit} (one statement): one more row than
 * `PAGE_SIZE` means a next page.
 */
export async function pageOf<Row extends { readonly id: string }>(
  selection: AdminSelection<Row>,
): Promise<ListPage<Row>> {
  const batch = await selection.toArray();
  const rows = batch.slice(0, PAGE_SIZE);
  return batch.length > PAGE_SIZE ? { rows, next: rows.at(-1)!.id } : { rows };
}

/** Only the `keys` of a query string (the filters), so that coming back never carries anything else. */
export function keepParams(query: string, keys: readonly string[]): string {
  const given = new URLSearchParams(query);
  const kept = new URLSearchParams();
  for (const key of keys) {
    const value = given.get(key);
    if (value !== null && value !== '') kept.set(key, value);
  }
  return kept.toString();
}
