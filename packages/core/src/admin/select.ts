import { positiveIntegerOption, rejectUnknownOptions } from '../config/options';
import { LIST_KEYS as DEAD_LETTER_KEYS } from '../dead-letters/create-dead-letters';
import type { DeadLetter, DeadLetters } from '../dead-letters/types';
import { LIST_KEYS as OUTBOX_KEYS } from './outbox';
import type {
  AdminSelection,
  ListOutboxOptions,
  OutboxEntry,
  SelectDeadLettersOptions,
  SelectOutboxOptions,
} from './types';

/** The most rows one `list` call returns. */
const PAGE_MAX = 1000;

/** One page's place: how many rows, after which id. */
interface PageOptions {
  readonly limit: number;
  readonly after?: string;
}

/**
 * The rows `list` gives for the filters, page by page after the last id of the page before,
 * until `most` rows or a short page. Each page asks for no more than are still wanted, so a
 * selection of 51 rows is one statement of `limit 51`.
 */
async function* pages<Row extends { readonly id: string }>(
  list: (page: PageOptions) => Promise<Row[]>,
  most: number,
  after: string | undefined,
): AsyncGenerator<Row, void, undefined> {
  let left = most;
  let cursor = after;
  while (left > 0) {
    const want = Math.min(PAGE_MAX, left);
    const page = await list(
      cursor === undefined ? { limit: want } : { limit: want, after: cursor },
    );
    for (const row of page) yield row;
    left -= page.length;
    if (page.length < want) return;
    cursor = page[page.length - 1]!.id;
  }
}

/** The keys of a list call's filters, `limit` and `after` among them. */
type FilterOptions = { readonly limit?: number; readonly after?: string; readonly ids?: unknown };

/**
 * A selection over `list`: `options` checked now (`limit`, unknown keys), the filters by
 * `list` on the first page.
 */
function selection<Row extends { readonly id: string }, Options extends FilterOptions>(
  context: string,
  keys: readonly string[],
  options: Options,
  list: (filters: Omit<Options, 'limit' | 'after'> & PageOptions) => Promise<Row[]>,
): AdminSelection<Row> {
  rejectUnknownOptions(options, keys, context);
  const { limit, after, ...filters } = options;
  const total = positiveIntegerOption(limit, 'limit', Number.POSITIVE_INFINITY);
  // Named ids bound the selection: no page past the last of them.
  const named = Array.isArray(filters.ids) && filters.ids.length > 0;
  const most = named ? Math.min(total, new Set(filters.ids as unknown[]).size) : total;
  const rows = () => pages((page) => list({ ...filters, ...page }), most, after);
  return {
    [Symbol.asyncIterator]: rows,
    async toArray() {
      const out: Row[] = [];
      for await (const row of rows()) out.push(row);
      return out;
    },
  };
}

// `select` takes the options of `list` (its `limit` bounds the whole selection): the same names.

/** `admin.deadLetters.select`, over `letters.list`. @internal */
export function selectDeadLetters(
  list: DeadLetters['list'],
  options: SelectDeadLettersOptions = {},
): AdminSelection<DeadLetter> {
  return selection('deadLetters.select', DEAD_LETTER_KEYS, options, list);
}

/** `admin.outbox.select`, over `outbox.list`. @internal */
export function selectOutbox(
  list: (options: ListOutboxOptions) => Promise<OutboxEntry[]>,
  options: SelectOutboxOptions = {},
): AdminSelection<OutboxEntry> {
  return selection('outbox.select', OUTBOX_KEYS, options, list);
}
