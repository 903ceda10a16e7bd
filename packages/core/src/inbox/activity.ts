import type { Logger } from '../observability/logger';
import type { Store } from '../store/store';
import { textOf } from '../common/text';
import { isMysql } from '../store/dialect';
import type { MigrationNames } from '../store/migration';
import { mysqlActivityUpsert } from './sql/mysql/activity';
import type { InboxOutcome } from './types';

const MINUTE_MS = 60_000;
/** Minutes kept in memory while flushes fail; older ones are dropped (two hours). */
export const MAX_PENDING_MINUTES = 120;

/** What one consumer did in one minute. @internal */
export interface MinuteCounts {
  handled: number;
  duplicates: number;
  deadLettered: number;
}

/**
 * The per-minute activity of one inbox, counted in memory and added to `consumer_activity`
 * off the hot path. @internal
 */
export interface ActivityRecorder {
  /** Counts one outcome (processed, duplicate, dead-lettered; failures are not counted). */
  record(outcome: InboxOutcome<unknown>): void;
  /**
   * Writes what is pending now, after any flush in progress. Never rejects: a failure is
   * logged at warn and the counts are kept for the next flush.
   */
  flush(): Promise<void>;
}

/** Settings of {@link createActivityRecorder}. @internal */
export interface ActivitySettings {
  readonly store: Store;
  readonly consumer: string;
  readonly logger: Logger;
  /** Longest wait between a count and its flush; `0` records nothing. */
  readonly flushMs: number;
  /** The clock for minute buckets; injectable for tests. */
  readonly now?: () => number;
}

const NOTHING: Promise<void> = Promise.resolve();

/** The one upsert of a flush: rows sorted by minute so concurrent flushes lock in one order. */
function upsertStatement(
  names: MigrationNames,
  consumer: string,
  minutes: ReadonlyArray<[number, MinuteCounts]>,
): { sql: string; bindings: Array<string | number | Date> } {
  const table = names.table('consumer_activity');
  if (isMysql(names)) return mysqlActivityUpsert(table, consumer, minutes);
  const bindings: Array<string | number> = [];
  const values = minutes.map(([minute, c]) => {
    bindings.push(
      consumer,
      new Date(minute).toISOString(),
      c.handled,
      c.duplicates,
      c.deadLettered,
    );
    return '(?, ?::timestamptz, ?::bigint, ?::bigint, ?::bigint)';
  });
  return {
    sql: `insert into ${table} as t (consumer, minute, handled, duplicates, dead_lettered)
          values ${values.join(', ')}
          on conflict (consumer, minute) do update set
            handled = t.handled + excluded.handled,
            duplicates = t.duplicates + excluded.duplicates,
            dead_lettered = t.dead_lettered + excluded.dead_lettered`,
    bindings,
  };
}

function add(into: Map<number, MinuteCounts>, minute: number, counts: MinuteCounts): void {
  const current = into.get(minute);
  if (current === undefined) {
    into.set(minute, { ...counts });
    return;
  }
  current.handled += counts.handled;
  current.duplicates += counts.duplicates;
  current.deadLettered += counts.deadLettered;
}

/**
 * Counts outcomes per minute and flushes them with one upsert on the store's pool, never in
 * a handler's transaction. The timer is `unref()`ed and runs only while counts are pending,
 * so an idle inbox schedules nothing and never keeps the process alive. @internal
 */
export function createActivityRecorder(settings: ActivitySettings): ActivityRecorder {
  const { store, consumer, logger, flushMs } = settings;
  const now = settings.now ?? Date.now;
  if (flushMs === 0) return { record: () => undefined, flush: () => NOTHING };

  let pending = new Map<number, MinuteCounts>();
  let timer: ReturnType<typeof setTimeout> | undefined;
  let chain: Promise<void> = NOTHING;
  let warnedOverflow = false;

  const schedule = (): void => {
    if (timer !== undefined || pending.size === 0) return;
    timer = setTimeout(() => {
      timer = undefined;
      void flush();
    }, flushMs);
    timer.unref();
  };

  // Bounded memory through a long outage: the oldest minutes go first.
  const trim = (): void => {
    if (pending.size <= MAX_PENDING_MINUTES) return;
    const dropped = [...pending.keys()].sort((a, b) => a - b);
    dropped.slice(0, pending.size - MAX_PENDING_MINUTES).forEach((m) => pending.delete(m));
    if (!warnedOverflow) {
      warnedOverflow = true;
      logger.warn('inbox: activity counts could not be written; dropping the oldest minutes', {
        consumer,
        keptMinutes: MAX_PENDING_MINUTES,
      });
    }
  };

  const flushOnce = async (): Promise<void> => {
    if (pending.size === 0) return;
    const taken = pending;
    pending = new Map();
    const minutes = [...taken.entries()].sort((a, b) => a[0] - b[0]);
    const { sql, bindings } = upsertStatement(store.names, consumer, minutes);
    try {
      await store.knex.raw(sql, bindings);
    } catch (error) {
      // Keep the counts (merged with what came meanwhile) for the next flush.
      for (const [minute, counts] of minutes) add(pending, minute, counts);
      trim();
      logger.warn('inbox: could not write activity counts; keeping them for the next flush', {
        consumer,
        minutes: minutes.length,
        error: error instanceof Error ? error.message : textOf(error),
      });
    }
  };

  function flush(): Promise<void> {
    if (timer !== undefined) {
      clearTimeout(timer);
      timer = undefined;
    }
    chain = chain.then(flushOnce).finally(schedule);
    return chain;
  }

  return {
    record(outcome) {
      let counts: MinuteCounts;
      switch (outcome.status) {
        case 'processed':
          counts = { handled: 1, duplicates: 0, deadLettered: 0 };
          break;
        case 'duplicate':
          counts = { handled: 0, duplicates: 1, deadLettered: 0 };
          break;
        case 'dead-lettered':
          counts = { handled: 0, duplicates: 0, deadLettered: 1 };
          break;
        case 'failed':
          return;
      }
      add(pending, Math.floor(now() / MINUTE_MS) * MINUTE_MS, counts);
      trim();
      schedule();
    },
    flush,
  };
}
