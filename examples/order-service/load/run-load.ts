/**
 * The load: `orders` new orders through `POST /orders`, `concurrency` at a time, each under
 * its own Idempotency-Key and retried with it; plus duplicates made on purpose — a second
 * request with the same key at the same moment, one more after the order was created (it must
 * be a byte-identical replay), and a key reused with another amount (it must be refused, 422).
 */
import type { NewOrder } from '../orders/contract';
import {
  emptyClientStats,
  postOrder,
  RejectedError,
  type ClientStats,
  type Settled,
} from './post-order';

/** Options of {@link runLoad}. */
export interface LoadOptions {
  readonly baseUrl: string;
  readonly orders: number;
  readonly concurrency: number;
  /** Seeded random source. */
  readonly random: () => number;
  /** Prefix of the keys, unique per run. */
  readonly keyPrefix: string;
  /** Time limit of a request, in milliseconds. Default 5 000. */
  readonly timeoutMs?: number;
  /** Give up on an order after this long, in milliseconds. Default 120 000. */
  readonly giveUpMs?: number;
  /** Share of orders sent twice at once. Default 0.03. */
  readonly concurrentDuplicateRate?: number;
  /** Share of orders sent once more after they were created. Default 0.03. */
  readonly repeatRate?: number;
  /** Share of orders whose key is reused with another amount (at least one). Default 0.005. */
  readonly conflictRate?: number;
  /** Share of orders whose first request is abandoned after a few milliseconds. Default 0.02. */
  readonly dropRate?: number;
  /** Called after each order settles. */
  readonly onSettled?: (settled: number) => void;
}

/** One order the API accepted. */
export interface AcceptedOrder {
  readonly key: string;
  readonly orderId: string;
  /** When its first request was sent (epoch ms). */
  readonly sentAt: number;
}

/** What the load did and saw. */
export interface LoadResult {
  readonly accepted: readonly AcceptedOrder[];
  readonly stats: ClientStats;
  /** Requests sent on purpose with a key already in use (concurrent, repeated, conflicting). */
  readonly duplicateRequests: number;
  /** Replays that did not carry the first answer's exact bytes, or another order id. */
  readonly mismatches: number;
  /** Reused keys with another body that were not refused with 422. */
  readonly conflictsAccepted: number;
  /** Orders that never settled, or were refused. */
  readonly failures: readonly string[];
  readonly elapsedMs: number;
}

const CURRENCIES = ['EUR', 'USD', 'GBP'] as const;

function newOrder(random: () => number): NewOrder {
  return {
    customerId: `cust-${Math.floor(random() * 500)}`,
    amountCents: 100 + Math.floor(random() * 99_900),
    currency: CURRENCIES[Math.floor(random() * CURRENCIES.length)] ?? 'EUR',
  };
}

/** Runs the load and resolves once every order settled (or was given up on). */
export async function runLoad(options: LoadOptions): Promise<LoadResult> {
  const { random } = options;
  const stats = emptyClientStats();
  const post = {
    baseUrl: options.baseUrl,
    timeoutMs: options.timeoutMs ?? 5_000,
    giveUpMs: options.giveUpMs ?? 120_000,
    stats,
  };
  // Every random choice is drawn up front, so a seed gives the same plan whatever the timing.
  // Reused keys are every n-th order instead, so that even a small run has one.
  const conflictEvery = Math.max(1, Math.round(1 / (options.conflictRate ?? 0.005)));
  const plan = Array.from({ length: options.orders }, (_, i) => ({
    key: `${options.keyPrefix}-${String(i + 1).padStart(6, '0')}`,
    order: newOrder(random),
    concurrent: random() < (options.concurrentDuplicateRate ?? 0.03),
    repeat: random() < (options.repeatRate ?? 0.03),
    conflict: i % conflictEvery === Math.floor(Math.min(conflictEvery, options.orders) / 2),
    firstTimeoutMs:
      random() < (options.dropRate ?? 0.02) ? 1 + Math.floor(random() * 15) : undefined,
  }));
  const accepted: AcceptedOrder[] = [];
  const failures: string[] = [];
  let duplicateRequests = 0;
  let mismatches = 0;
  let conflictsAccepted = 0;
  let settledCount = 0;
  const started = Date.now();

  const one = async (item: (typeof plan)[number]): Promise<void> => {
    const sentAt = Date.now();
    const first = {
      ...post,
      ...(item.firstTimeoutMs === undefined ? {} : { firstTimeoutMs: item.firstTimeoutMs }),
    };
    const copies: Promise<Settled>[] = [postOrder(item.key, item.order, first)];
    if (item.concurrent) {
      duplicateRequests += 1;
      copies.push(postOrder(item.key, item.order, post));
    }
    const answers = await Promise.all(copies);
    const [answer] = answers;
    if (answer === undefined) return;
    if (answers.some((a) => a.body !== answer.body)) mismatches += 1;
    accepted.push({ key: item.key, orderId: answer.order.orderId, sentAt });
    if (item.repeat) {
      duplicateRequests += 1;
      const again = await postOrder(item.key, item.order, post);
      if (!again.replayed || again.body !== answer.body) mismatches += 1;
    }
    if (item.conflict) {
      duplicateRequests += 1;
      const changed = { ...item.order, amountCents: item.order.amountCents + 1 };
      const refused = await postOrder(item.key, changed, post).then(
        () => false,
        (error: unknown) => error instanceof RejectedError && error.status === 422,
      );
      if (!refused) conflictsAccepted += 1;
    }
  };

  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < plan.length) {
      const item = plan[next++];
      if (item === undefined) return;
      await one(item).catch((error: unknown) => failures.push(`${item.key}: ${String(error)}`));
      settledCount += 1;
      options.onSettled?.(settledCount);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, options.concurrency) }, worker));
  return {
    accepted,
    stats,
    duplicateRequests,
    mismatches,
    conflictsAccepted,
    failures,
    elapsedMs: Date.now() - started,
  };
}
