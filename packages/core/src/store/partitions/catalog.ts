import type { Knex } from 'knex';
import { rowsOf } from '../rows';

/** Anything that runs a raw statement: a knex, a transaction, or one pinned connection. @internal */
export interface RawRunner {
  raw(sql: string, bindings?: readonly Knex.Value[]): PromiseLike<unknown>;
}

/** One partition of a range-partitioned table, as the catalog describes it. @internal */
export interface PartitionInfo {
  /** Its unquoted name, in the parent's schema. */
  readonly name: string;
  /** The default partition, which takes rows no range covers. */
  readonly isDefault: boolean;
  /** Lower bound in epoch milliseconds, inclusive; `null` for `MINVALUE` (or the default). */
  readonly fromMs: number | null;
  /** Upper bound in epoch milliseconds, exclusive; `null` for `MAXVALUE` (or the default). */
  readonly toMs: number | null;
}

/**
 * Whether `table` (quoted, qualified) is a plain table (`'r'`), a partitioned one (`'p'`), or
 * missing (`undefined`). @internal
 */
export async function tableKind(knex: RawRunner, table: string): Promise<'r' | 'p' | undefined> {
  const result = await knex.raw(
    `select c.relkind::text as kind from pg_class c where c.oid = to_regclass(?)`,
    [table],
  );
  const kind = rowsOf<{ kind: string }>(result)[0]?.kind;
  return kind === 'r' || kind === 'p' ? kind : undefined;
}

/**
 * The partitions of `parent` (quoted, qualified), bounds read back as timestamps by the server
 * (the bound's text is written in the session's time zone, with its offset), oldest first and
 * the default last. @internal
 */
export async function listPartitions(db: RawRunner, parent: string): Promise<PartitionInfo[]> {
  const result = await db.raw(
    `select c.relname as name, b.bound = 'DEFAULT' as is_default,
            extract(epoch from substring(b.bound from 'FROM \\(''([^'']*)''\\)')::timestamptz)
              * 1000 as from_ms,
            extract(epoch from substring(b.bound from 'TO \\(''([^'']*)''\\)')::timestamptz)
              * 1000 as to_ms
       from pg_inherits i
       join pg_class c on c.oid = i.inhrelid
       cross join lateral (select pg_get_expr(c.relpartbound, c.oid) as bound) b
      where i.inhparent = to_regclass(?)`,
    [parent],
  );
  const ms = (v: string | number | null): number | null => (v === null ? null : Number(v));
  return rowsOf<{
    name: string;
    is_default: boolean;
    from_ms: string | number | null;
    to_ms: string | number | null;
  }>(result)
    .map((r) => ({
      name: r.name,
      isDefault: r.is_default,
      fromMs: r.is_default ? null : ms(r.from_ms),
      toMs: r.is_default ? null : ms(r.to_ms),
    }))
    .sort((a, b) =>
      a.isDefault !== b.isDefault
        ? Number(a.isDefault) - Number(b.isDefault)
        : (a.fromMs ?? -Infinity) - (b.fromMs ?? -Infinity),
    );
}

/** A bound as a timestamptz literal, for DDL (which takes no bindings). @internal */
export function boundLiteral(ms: number | null, open: 'MINVALUE' | 'MAXVALUE'): string {
  return ms === null ? open : `'${new Date(ms).toISOString()}'`;
}

/** The suffix naming the partition that starts at `fromMs`: `p` and its UTC start, to the minute. @internal */
export function partitionSuffix(fromMs: number): string {
  const iso = new Date(fromMs).toISOString(); // 2026-12-04T00:00:00.000Z
  return `p${iso.slice(0, 4)}${iso.slice(5, 7)}${iso.slice(8, 10)}${iso.slice(11, 13)}${iso.slice(14, 16)}`;
}

/** The first boundary strictly after `ms`, boundaries being multiples of `intervalMs`. @internal */
export function nextBoundary(ms: number, intervalMs: number): number {
  return (Math.floor(ms / intervalMs) + 1) * intervalMs;
}
