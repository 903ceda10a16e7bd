import type { Knex } from 'knex';
import { optionKeys, rejectUnknownOptions } from '../config/options';
import { ConfigurationError } from '../errors/configuration-error';
import { outboxChannel } from '../outbox/channel';
import { requeueDead } from '../relay/sql/dead';
import { rowsOf } from '../store/migrate';
import type { Store } from '../store/store';
import type { AdminOutbox, ListOutboxOptions, OutboxEntry } from './types';
import { choiceOption, dateOption, limitOption, rowId, stringOption } from '../config/arguments';
import { storedHeaders } from '../outbox/sql/headers';
import { isMysql } from '../store/dialect';
import { MYSQL_OUTBOX_FILTERS, mysqlDeleteOutboxRow, mysqlGetOutboxRow } from './sql/mysql/outbox';

/** The option names of {@link AdminOutbox.list} (and of `select`). @internal */
export const LIST_KEYS = optionKeys<ListOutboxOptions>()([
  'status',
  'stuckAfterMs',
  'destination',
  'since',
  'until',
  'ids',
  'limit',
  'after',
]);

const COLUMNS = `id, destination, partition_key, message_id, status, headers, payload, attempts,
  last_error, created_at, available_at, published_at`;

interface OutboxRow {
  id: string | number;
  destination: string;
  partition_key: string | null;
  message_id: string;
  status: OutboxEntry['status'];
  headers: Record<string, string> | string;
  payload: Uint8Array;
  attempts: number | string;
  last_error: string | null;
  created_at: Date | string;
  available_at: Date | string;
  published_at: Date | string | null;
}

function toEntry(row: OutboxRow): OutboxEntry {
  return {
    id: String(row.id),
    destination: row.destination,
    key: row.partition_key,
    messageId: row.message_id,
    status: row.status,
    headers: storedHeaders(row.headers),
    payload: new Uint8Array(row.payload),
    attempts: Number(row.attempts),
    lastError: row.last_error,
    createdAt: new Date(row.created_at),
    availableAt: new Date(row.available_at),
    publishedAt: row.published_at === null ? null : new Date(row.published_at),
  };
}

/** A condition of a list call and its bindings. */
interface Condition {
  readonly sql: string;
  readonly bindings: readonly Knex.RawBinding[];
}

/** The conditions of a list call that differ between dialects. @internal */
export interface OutboxFilters {
  /** Pending rows tried before, or older than `stuckAfterMs`. */
  stuck(stuckAfterMs: number): Condition;
  /** Rows with one of these ids (validated row ids). */
  ids(ids: readonly string[]): Condition;
  /** Rows after this id (a validated row id), for the next page. */
  after(id: string): Condition;
}

/** PostgreSQL's {@link OutboxFilters}. */
const FILTERS: OutboxFilters = {
  stuck: (stuckAfterMs) => ({
    sql: `(attempts > 0 or created_at < now() - ? * interval '1 millisecond')`,
    bindings: [stuckAfterMs],
  }),
  ids: (ids) => ({ sql: 'id = any(?::bigint[])', bindings: [`{${ids.join(',')}}`] }),
  after: (id) => ({ sql: 'id > ?::bigint', bindings: [id] }),
};

/** The `where` clause of a list call; every value is bound, never spliced. */
function listFilter(
  options: ListOutboxOptions,
  filters: OutboxFilters,
): { where: string[]; bindings: Knex.RawBinding[] } {
  const status = choiceOption(options.status, 'status', ['dead', 'pending', 'stuck'], 'dead');
  const stuckAfterMs = options.stuckAfterMs ?? 60_000;
  if (typeof stuckAfterMs !== 'number' || !Number.isFinite(stuckAfterMs) || stuckAfterMs < 0) {
    throw new ConfigurationError(
      'stuckAfterMs must be a finite number of milliseconds, at least 0',
      {
        stuckAfterMs,
      },
    );
  }
  const where: string[] = [status === 'dead' ? `status = 'dead'` : `status = 'pending'`];
  const bindings: Knex.RawBinding[] = [];
  const add = (condition: Condition): void => {
    where.push(condition.sql);
    bindings.push(...condition.bindings);
  };
  if (status === 'stuck') add(filters.stuck(stuckAfterMs));
  const destination = stringOption(options.destination, 'destination');
  if (destination !== undefined) {
    where.push('destination = ?');
    bindings.push(destination);
  }
  const since = dateOption(options.since, 'since');
  if (since !== undefined) {
    where.push('created_at >= ?');
    bindings.push(since);
  }
  const until = dateOption(options.until, 'until');
  if (until !== undefined) {
    where.push('created_at < ?');
    bindings.push(until);
  }
  if (options.ids !== undefined) {
    if (!Array.isArray(options.ids) || options.ids.length > 1000) {
      throw new ConfigurationError('ids must be an array of at most 1000 row ids', {
        ids: Array.isArray(options.ids) ? options.ids.length : typeof options.ids,
      });
    }
    add(filters.ids(options.ids.map((id) => rowId(id, 'ids[]'))));
  }
  if (options.after !== undefined) add(filters.after(rowId(options.after, 'after')));
  return { where, bindings };
}

/** The outbox, for operators ({@link AdminOutbox}; `select` is made over `list`). @internal */
export function adminOutbox(store: Store): Omit<AdminOutbox, 'select'> {
  const { knex, names } = store;
  const table = names.table('outbox');
  const channel = outboxChannel(names);
  const mysql = isMysql(store);
  return {
    async list(options: ListOutboxOptions = {}): Promise<OutboxEntry[]> {
      rejectUnknownOptions(options, LIST_KEYS, 'outbox.list');
      const limit = limitOption(options.limit);
      const { where, bindings } = listFilter(options, mysql ? MYSQL_OUTBOX_FILTERS : FILTERS);
      const result = await knex.raw(
        `select ${COLUMNS} from ${table} where ${where.join(' and ')} order by id limit ?`,
        [...bindings, limit],
      );
      return rowsOf<OutboxRow>(result).map(toEntry);
    },

    async get(id: string): Promise<OutboxEntry | undefined> {
      if (mysql) {
        const row = await mysqlGetOutboxRow<OutboxRow>(knex, table, COLUMNS, rowId(id));
        return row === undefined ? undefined : toEntry(row);
      }
      const result = await knex.raw(`select ${COLUMNS} from ${table} where id = ?::bigint`, [
        rowId(id),
      ]);
      const row = rowsOf<OutboxRow>(result)[0];
      return row === undefined ? undefined : toEntry(row);
    },

    async requeue(id: string): Promise<string | null> {
      // The relay's own requeue, with its notification so that a running relay wakes.
      return requeueDead(knex, names, rowId(id), channel);
    },

    async delete(id: string): Promise<boolean> {
      if (mysql) return mysqlDeleteOutboxRow(knex, table, rowId(id));
      const result = await knex.raw(
        `delete from ${table} where id = ?::bigint and status in ('dead', 'pending') returning id`,
        [rowId(id)],
      );
      return rowsOf(result).length > 0;
    },
  };
}
