import type { MinuteCounts } from '../../activity';

/**
 * MySQL's activity upsert (see `../../activity.ts`): `on duplicate key update` adds the
 * inserted row's counts (`values()`) to the stored ones; each minute goes as a `Date`, which
 * mysql2 writes in UTC, the session's zone. @internal
 */
export function mysqlActivityUpsert(
  table: string,
  consumer: string,
  minutes: ReadonlyArray<[number, MinuteCounts]>,
): { sql: string; bindings: Array<string | number | Date> } {
  const bindings: Array<string | number | Date> = [];
  for (const [minute, c] of minutes) {
    bindings.push(consumer, new Date(minute), c.handled, c.duplicates, c.deadLettered);
  }
  return {
    sql: `insert into ${table} (consumer, minute, handled, duplicates, dead_lettered)
          values ${minutes.map(() => '(?, ?, ?, ?, ?)').join(', ')}
          on duplicate key update
            handled = handled + values(handled),
            duplicates = duplicates + values(duplicates),
            dead_lettered = dead_lettered + values(dead_lettered)`,
    bindings,
  };
}
