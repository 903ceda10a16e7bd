/**
 * Group commit for statements that run on their own (in no caller's transaction): calls
 * made while earlier ones are on their way to the database wait and then go together, as
 * one statement over many rows. Under load, N concurrent calls cost about one round trip
 * and one server-side execution instead of N; a call made while the database is idle goes
 * at once, alone, so nothing waits when there is nothing to group.
 */
import { isStoreOutage } from './outage';

/** Runs calls one at a time or many in one statement. @internal */
export interface Coalescer<I, O> {
  /** Runs `item`, alone or with others waiting at the same time. */
  run(item: I): Promise<O>;
}

/** How a {@link Coalescer} runs its calls. @internal */
export interface CoalescerOptions<I, O> {
  /** Runs one item in a statement of its own. */
  one(item: I): Promise<O>;
  /** Runs several items (two or more) in one statement; resolves to their results in order. */
  many(items: readonly I[]): Promise<readonly O[]>;
  /**
   * The row an item touches. Items with the same key never share a statement (one
   * statement cannot change a row twice); a group is sent in key order, so that two groups
   * lock their rows in the same order and cannot deadlock.
   */
  key(item: I): string;
  /** Statements on their way at once; calls made beyond that wait to be grouped. Default 2. */
  maxInFlight?: number;
  /** Items in one statement at most. Default 100. */
  maxBatch?: number;
}

interface Waiting<I, O> {
  readonly item: I;
  readonly key: string;
  resolve(value: O): void;
  reject(error: unknown): void;
}

function byKey<I, O>(a: Waiting<I, O>, b: Waiting<I, O>): number {
  return a.key < b.key ? -1 : a.key > b.key ? 1 : 0;
}

/**
 * Creates a {@link Coalescer}. When the grouped statement fails for something other than an
 * outage of the store (a data error, a deadlock), each of its items runs again alone, so
 * that one item's fault is that item's only; an outage fails every item of the group, as it
 * would have failed each of them alone. @internal
 */
export function createCoalescer<I, O>(options: CoalescerOptions<I, O>): Coalescer<I, O> {
  const { one, many, key } = options;
  const maxInFlight = options.maxInFlight ?? 2;
  const maxBatch = options.maxBatch ?? 100;
  let waiting: Array<Waiting<I, O>> = [];
  let inFlight = 0;

  const alone = (w: Waiting<I, O>): Promise<void> => one(w.item).then(w.resolve, w.reject);

  const send = async (group: Array<Waiting<I, O>>): Promise<void> => {
    try {
      if (group.length === 1) return await alone(group[0]!);
      let results: readonly O[];
      try {
        results = await many(group.map((w) => w.item));
      } catch (error) {
        if (isStoreOutage(error)) {
          for (const w of group) w.reject(error);
          return;
        }
        await Promise.all(group.map(alone));
        return;
      }
      group.forEach((w, i) => w.resolve(results[i]!));
    } finally {
      inFlight -= 1;
      pump();
    }
  };

  const pump = (): void => {
    while (inFlight < maxInFlight && waiting.length > 0) {
      const group: Array<Waiting<I, O>> = [];
      const keys = new Set<string>();
      const later: Array<Waiting<I, O>> = [];
      for (const w of waiting) {
        if (group.length < maxBatch && !keys.has(w.key)) {
          keys.add(w.key);
          group.push(w);
        } else {
          later.push(w);
        }
      }
      waiting = later;
      inFlight += 1;
      void send(group.sort(byKey));
    }
  };

  return {
    run: (item) =>
      new Promise<O>((resolve, reject) => {
        waiting.push({ item, key: key(item), resolve, reject });
        pump();
      }),
  };
}
