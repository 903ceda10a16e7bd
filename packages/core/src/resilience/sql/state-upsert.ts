import { isMysql } from '../../store/dialect';
import type { MigrationNames } from '../../store/migration';

/** One row of `consumer_resilience` as a consumer writes it. @internal */
export interface StateRow {
  readonly key: string;
  readonly state: string | null;
  readonly since: Date | null;
  readonly budgetRemaining: number | null;
  readonly windowMs: number;
  readonly firstDeliveries: number;
  readonly retriesPaid: number;
  readonly retriesShed: number;
  readonly breakerSheds: number;
}

type Binding = string | number | Date | null;

/**
 * The upsert of one report: each row overwrites the stored one of its key (a state, not a
 * count), stamped with the database clock; rows sorted by key so two processes of one
 * consumer lock them in one order. @internal
 */
export function stateUpsert(
  names: MigrationNames,
  consumer: string,
  rows: readonly StateRow[],
): { sql: string; bindings: Binding[] } {
  const table = names.table('consumer_resilience');
  const mysql = isMysql(names);
  const bindings: Binding[] = [];
  const sorted = [...rows].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  const values = sorted.map((r) => {
    bindings.push(
      consumer,
      r.key,
      r.state,
      r.since,
      r.budgetRemaining,
      r.windowMs,
      r.firstDeliveries,
      r.retriesPaid,
      r.retriesShed,
      r.breakerSheds,
    );
    return mysql
      ? '(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, current_timestamp(6))'
      : '(?, ?, ?::text, ?::timestamptz, ?::integer, ?, ?, ?, ?, ?, now())';
  });
  const columns = [
    'state',
    'state_since',
    'budget_remaining',
    'window_ms',
    'first_deliveries',
    'retries_paid',
    'retries_shed',
    'breaker_sheds',
    'reported_at',
  ];
  const insert = `insert into ${table} (consumer, breaker_key, ${columns.join(', ')})
          values ${values.join(', ')}`;
  return {
    sql: mysql
      ? `${insert} on duplicate key update ${columns.map((c) => `${c} = values(${c})`).join(', ')}`
      : `${insert} on conflict (consumer, breaker_key) do update set ${columns
          .map((c) => `${c} = excluded.${c}`)
          .join(', ')}`,
    bindings,
  };
}

/** Deletes the rows of `consumer` not reported since `before`: keys it no longer tracks. @internal */
export function stateForget(
  names: MigrationNames,
  consumer: string,
  before: Date,
): { sql: string; bindings: Binding[] } {
  return {
    sql: `delete from ${names.table('consumer_resilience')} where consumer = ? and reported_at < ?`,
    bindings: [consumer, before],
  };
}
