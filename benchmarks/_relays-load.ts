/**
 * The offered load of `pnpm bench relays` (see relays.ts): events committed at a steady rate
 * through several connections, and the search for the highest rate a side sustains.
 */
import { createOutbox } from '@justonce/core';
import { percentile } from './_support';
import type { RelaySide } from './_relays-sides';

/** Transactions in flight at once: below the stores' pool of 12. */
const CONNECTIONS = 8;
/** A step kept up when its last event arrived within this long after its last commit. */
const CAUGHT_UP_MS = 1_000;
/** A step the producers reached less than this share of is the load generator's limit. */
const REACHED = 0.9;

/** Commit → arrival at the consumer, per event id. */
export interface Arrivals {
  readonly at: ReadonlyMap<string, number>;
  /** Resolves when every one of `ids` has arrived, or rejects after `timeoutMs`. */
  waitFor(ids: readonly string[], timeoutMs: number): Promise<void>;
}

/** What one step of offered load measured. */
export interface Offered {
  /** The rate the producers reached (events/s). */
  readonly perSec: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  /** From the last commit to the last arrival: how far behind the side was at the end. */
  readonly caughtUpMs: number;
}

/**
 * Offers `rate` events/s for `seconds`. Whatever is due goes out at once, spread over the
 * free connections, each transaction a multi-row insert of its share: at low rates one event
 * per transaction, at high rates as many as came due while the connections were busy (as an
 * application's own traffic batches under load). Latency is from each event's commit.
 */
export async function offer(
  side: RelaySide,
  seen: Arrivals,
  rate: number,
  seconds: number,
): Promise<Offered> {
  const outbox = createOutbox({ store: side.store });
  const committed = new Map<string, number>();
  const total = Math.max(1, Math.round(rate * seconds));
  const started = performance.now();
  const inFlight: Promise<void>[] = [];
  let active = 0;
  let sent = 0;
  while (sent < total) {
    const due = Math.min(total, Math.floor(((performance.now() - started) / 1000) * rate) + 1);
    while (sent < due && active < CONNECTIONS) {
      const size = Math.ceil((due - sent) / (CONNECTIONS - active));
      const from = sent;
      sent += size;
      active += 1;
      inFlight.push(
        side.store.knex
          // synchronous_commit stays on: a log reader gets a commit only once its WAL is
          // flushed, which with `off` waits for the WAL writer (wal_writer_delay).
          .transaction(async (trx) =>
            outbox.add(
              trx,
              Array.from({ length: size }, (_, j) => ({
                destination: side.topic,
                key: `lat-${(from + j) % 100}`,
                headers: { type: 'bench.latency' },
                payload: { n: from + j },
              })),
            ),
          )
          .then((ids) => {
            const now = Date.now();
            for (const id of ids) committed.set(id, now);
          })
          .finally(() => {
            active -= 1;
          }),
      );
    }
    // Until the next event is due: the relay and the consumer share this process's loop.
    const nextDueMs = ((sent + 1) / rate) * 1000 - (performance.now() - started);
    await new Promise((resolve) => setTimeout(resolve, Math.max(1, nextDueMs)));
  }
  await Promise.all(inFlight);
  const perSec = total / ((performance.now() - started) / 1000);
  const ids = [...committed.keys()];
  const lastCommit = Math.max(...committed.values());
  await seen.waitFor(ids, 120_000);
  const latencies = ids.map((id) => seen.at.get(id)! - committed.get(id)!);
  const lastArrival = Math.max(...ids.map((id) => seen.at.get(id)!));
  return {
    perSec,
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
    caughtUpMs: Math.max(0, lastArrival - lastCommit),
  };
}

/** The highest sustained step, and whether the producers rather than the side set it. */
export interface Sustained extends Offered {
  /** True when the producers could not offer the next step: the side's limit is higher. */
  readonly producersLimit: boolean;
  /** Every step tried, for the log. */
  readonly steps: readonly (Offered & { readonly offeredPerSec: number })[];
}

/**
 * Steps the offered rate up from `from`, doubling, until a step leaves a backlog (its last
 * event arrives more than a second after its last commit) or the producers fall short of the
 * rate; resolves to the last step the side kept up with.
 */
export async function highestSustained(
  side: RelaySide,
  seen: Arrivals,
  from: number,
  seconds: number,
  maxRate: number,
): Promise<Sustained> {
  const steps: (Offered & { offeredPerSec: number })[] = [];
  let best: (Offered & { offeredPerSec: number }) | null = null;
  let failedAt: number | null = null;
  for (let rate = from; rate <= maxRate; rate *= 2) {
    const step = { ...(await offer(side, seen, rate, seconds)), offeredPerSec: rate };
    steps.push(step);
    if (step.caughtUpMs > CAUGHT_UP_MS) {
      failedAt = rate;
      break;
    }
    best = step;
    if (step.perSec < rate * REACHED) return { ...step, producersLimit: true, steps };
  }
  if (best !== null && failedAt !== null) {
    // One step between the last kept up and the first not: halves the doubling's error.
    const rate = Math.round((best.offeredPerSec + failedAt) / 2);
    const step = { ...(await offer(side, seen, rate, seconds)), offeredPerSec: rate };
    steps.push(step);
    if (step.caughtUpMs <= CAUGHT_UP_MS) best = step;
  }
  // Not even the first step kept up: report it, it is the side's figure at that rate.
  return { ...(best ?? steps[0]!), producersLimit: false, steps };
}
