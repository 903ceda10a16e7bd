import type { Knex } from 'knex';
import { fullJitterBackoff } from '../retry/backoff';
import type { OutgoingMessage, PublishResult } from '../transport/publisher';
import type { PublishGate } from './publish-gate';
import type { ResolvedRelayOptions } from './options';
import { claimBatch, type ClaimedRow } from './sql/claim';
import { markFailed, markPublished, type FailureMark } from './sql/mark';
import type { CycleResult } from './types';

/** The longest error text kept in `last_error`. */
const MAX_ERROR_LENGTH = 2_000;

/** What the relay decided for each claimed row. @internal */
export interface Decisions {
  readonly published: string[];
  readonly failures: FailureMark[];
  readonly released: string[];
  /** Keys whose publisher result broke per-key order (a success after a failure). */
  readonly disorderedKeys: string[];
}

function toMessage(row: ClaimedRow): OutgoingMessage {
  const headers =
    typeof row.headers === 'string'
      ? (JSON.parse(row.headers) as Record<string, string>)
      : row.headers;
  return {
    messageId: row.message_id,
    destination: row.destination,
    key: row.partition_key,
    headers,
    payload: row.payload,
  };
}

function describe(error: unknown): string {
  const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  return text.length > MAX_ERROR_LENGTH ? text.slice(0, MAX_ERROR_LENGTH) : text;
}

/**
 * Turns publish results into marks. Per key, in id order: successes up to the first failure
 * are published; the first failure counts an attempt (backoff, or dead after the last one);
 * the rest of the key is released untouched, so a failing event holds back only its own key.
 * Events without a key are independent of each other. @internal
 */
export function decide(
  rows: readonly ClaimedRow[],
  outcome: readonly PublishResult[] | Error,
  options: Pick<ResolvedRelayOptions, 'maxAttempts' | 'backoff'>,
): Decisions {
  const published: string[] = [];
  const failures: FailureMark[] = [];
  const released: string[] = [];
  const disordered = new Set<string>();
  const blocked = new Set<string>();
  const failedCall = outcome instanceof Error ? outcome : null;
  const results = outcome instanceof Error ? [] : outcome;
  for (let i = 0; i < rows.length; i += 1) {
    const row = rows[i]!;
    let result: PublishResult | undefined = results[i];
    if (failedCall !== null) {
      result = { messageId: row.message_id, ok: false, error: failedCall, retriable: true };
    } else if (result === undefined || result.messageId !== row.message_id) {
      result = {
        messageId: row.message_id,
        ok: false,
        error: new Error('the publisher returned no result for this message'),
        retriable: true,
      };
    }
    const key = row.partition_key;
    if (key !== null && blocked.size > 0 && blocked.has(key)) {
      if (result.ok) {
        // Already out at the broker: record it, but the key's order is the publisher's fault.
        disordered.add(key);
        published.push(row.id);
      } else {
        released.push(row.id);
      }
      continue;
    }
    if (result.ok) {
      published.push(row.id);
      continue;
    }
    const attempt = row.attempts + 1;
    failures.push({
      id: row.id,
      error: describe(result.error),
      delayMs: fullJitterBackoff(attempt, options.backoff),
      dead: !result.retriable || attempt >= options.maxAttempts,
    });
    if (key !== null) blocked.add(key);
  }
  return { published, failures, released, disorderedKeys: [...disordered] };
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`publish did not finish within ${ms} ms`)), ms);
    // A publish abandoned by a timed-out stop must not keep the process alive.
    timer.unref();
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}

/**
 * How the cycles of one relay keep out of each other's way: a claim may start after the last
 * head a sibling cycle holds (`after`), since every head before it was either taken by that
 * sibling or unavailable when it claimed; `hold` publishes this cycle's last head while its
 * transaction is open (null when it holds none). @internal
 */
export interface SiblingHint {
  after(): string | null;
  hold(lastHead: string | null): void;
}

/** True if row id `a` is greater than row id `b` (both decimal, without leading zeros). */
export function idAfter(a: string, b: string): boolean {
  return a.length !== b.length ? a.length > b.length : a > b;
}

/** The greatest id among the claimed heads (each key's first row), or null. @internal */
function lastHeadId(rows: readonly ClaimedRow[]): string | null {
  const seen = new Set<string>();
  let last: string | null = null;
  for (const row of rows) {
    const key = row.partition_key;
    if (key === null || seen.has(key)) continue;
    seen.add(key);
    if (last === null || idAfter(row.id, last)) last = row.id;
  }
  return last;
}

/** What a cycle reports back to the relay besides its counts. @internal */
export interface CycleReport extends CycleResult {
  /** Shortest backoff scheduled, when any event failed retriably. */
  readonly nextRetryMs: number | null;
}

const EMPTY: CycleReport = {
  claimed: 0,
  published: 0,
  failed: 0,
  dead: 0,
  released: 0,
  nextRetryMs: null,
};

/**
 * One claim → publish → mark cycle, in one transaction: the claim holds the keys' head rows
 * locked until the marks commit. If the process dies, its connection closes, PostgreSQL rolls
 * the transaction back and the events are claimable at once. On PostgreSQL the transaction
 * also carries `idle_in_transaction_session_timeout = leaseMs`, so a relay stuck in a publish
 * longer than that loses its session (and its claim) instead of holding keys forever.
 *
 * `track` is called with the transaction while it is open, so a timed-out stop can roll it
 * back; `cancelled` is asked once the transaction has its connection. @internal
 */
export async function runCycle(
  o: ResolvedRelayOptions,
  track: (trx: Knex.Transaction | null) => void,
  cancelled: () => boolean = () => false,
  siblings: SiblingHint | null = null,
  gate: PublishGate | null = null,
): Promise<CycleReport> {
  const { store, logger } = o;
  const trx = await store.knex.transaction();
  track(trx);
  try {
    // The connection may have taken a while to come (PGlite has only one): a relay that was
    // stopped meanwhile claims nothing.
    if (cancelled()) {
      await trx.rollback();
      return EMPTY;
    }
    // On PostgreSQL the claim statement itself also sets
    // idle_in_transaction_session_timeout = leaseMs for the rest of the transaction.
    const rows = await claimBatch(
      trx,
      store.names,
      o.batchSize,
      store.dialect === 'postgres' ? o.leaseMs : null,
      siblings?.after() ?? null,
    );
    siblings?.hold(lastHeadId(rows));
    if (rows.length === 0) {
      await trx.commit();
      return EMPTY;
    }
    const messages = rows.map(toMessage);
    let outcome: PublishResult[] | Error;
    const release = gate ? await gate.acquire() : null;
    try {
      outcome = await withTimeout(o.publisher.publish(messages), o.publishTimeoutMs);
    } catch (error) {
      outcome = error instanceof Error ? error : new Error(String(error));
      logger.warn('relay: publish call failed', { error: describe(error), events: rows.length });
    } finally {
      release?.();
    }
    const d = decide(rows, outcome, o);
    for (const key of d.disorderedKeys) {
      logger.warn('relay: publisher accepted a message after an earlier one of its key failed', {
        key,
      });
    }
    const published = await markPublished(
      trx,
      store.names,
      d.published,
      o.onPublished === 'delete',
    );
    const dead = (await markFailed(trx, store.names, d.failures)).length;
    await trx.commit();
    for (const failure of d.failures) {
      logger[failure.dead ? 'error' : 'warn'](
        failure.dead ? 'relay: event is dead' : 'relay: publish failed; will retry',
        {
          id: failure.id,
          error: failure.error,
          retryInMs: failure.dead ? undefined : failure.delayMs,
        },
      );
    }
    const retrying = d.failures.filter((f) => !f.dead).map((f) => f.delayMs);
    return {
      claimed: rows.length,
      published,
      failed: d.failures.length,
      dead,
      released: d.released.length,
      nextRetryMs: retrying.length > 0 ? Math.min(...retrying) : null,
    };
  } catch (error) {
    if (!trx.isCompleted()) await trx.rollback().catch(() => undefined);
    throw error;
  } finally {
    track(null);
    siblings?.hold(null);
  }
}
