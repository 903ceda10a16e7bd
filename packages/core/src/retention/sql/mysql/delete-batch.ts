import type { Knex } from 'knex';
import { rowsOf } from '../../../store/migrate';
import type { BatchCursor } from '../delete-batch';

/** A primary key column: its name and its type, as `json_table` declares it. */
interface KeyColumn {
  readonly name: string;
  readonly type: string;
}

/** What a batch needs to know of its table: its primary key, and the index of its walk. */
interface TableShape {
  readonly key: readonly KeyColumn[];
  /** The index that leads with the walked column, quoted; `undefined` when there is none. */
  readonly walkIndex: string | undefined;
}

const quote = (name: string): string => `\`${name}\``;

/** Reads the shape of `table` (`` `schema`.`name` ``) for a walk along `column`. */
async function readShape(knex: Knex, table: string, column: string): Promise<TableShape> {
  const [schema = '', name = ''] = table.split('.').map((part) => part.replace(/`/g, ''));
  const key = rowsOf<{ name: string; type: string; charset: string | null; coll: string | null }>(
    await knex.raw(
      `select s.column_name as name, c.column_type as type,
              c.character_set_name as charset, c.collation_name as coll
         from information_schema.statistics s
         join information_schema.columns c
           on c.table_schema = s.table_schema and c.table_name = s.table_name
          and c.column_name = s.column_name
        where s.table_schema = ? and s.table_name = ? and s.index_name = 'PRIMARY'
        order by s.seq_in_index`,
      [schema, name],
    ),
  ).map((row) => ({
    name: row.name,
    type:
      row.charset === null || row.coll === null
        ? row.type
        : `${row.type} character set ${row.charset} collate ${row.coll}`,
  }));
  const walk = rowsOf<{ name: string }>(
    await knex.raw(
      `select index_name as name from information_schema.statistics
        where table_schema = ? and table_name = ? and index_name <> 'PRIMARY'
          and seq_in_index = 1 and column_name = ?
        order by index_name limit 1`,
      [schema, name, column],
    ),
  )[0];
  return { key, walkIndex: walk === undefined ? undefined : quote(walk.name) };
}

/** Each table's shape by table and column: read once per process. */
const SHAPES = new WeakMap<Knex, Map<string, Promise<TableShape>>>();

function shapeOf(knex: Knex, table: string, column: string): Promise<TableShape> {
  let known = SHAPES.get(knex);
  if (known === undefined) SHAPES.set(knex, (known = new Map()));
  const id = `${table} ${column}`;
  let shape = known.get(id);
  if (shape === undefined) {
    shape = readShape(knex, table, column);
    // A failed read is not remembered: the next batch asks again.
    shape.catch(() => known.delete(id));
    known.set(id, shape);
  }
  return shape;
}

/** A key value as `json_table` reads it back into its column's type. */
function jsonValue(value: unknown): unknown {
  if (Buffer.isBuffer(value)) return value.toString('utf8');
  if (value instanceof Date) return value.toISOString().replace('T', ' ').replace('Z', '');
  return value;
}

/**
 * @internal
 * MySQL's `deleteBatch`. MySQL has neither `ctid` nor `DELETE … RETURNING`, and its `DELETE`
 * cannot skip locked rows; so one short transaction picks the batch with `select … for update
 * skip locked`, in the order of the cursor's column from where the last batch ended, and
 * deletes exactly those rows by primary key. As on PostgreSQL, the cleanup never waits for a
 * writer holding one of the rows, and a writer waits only for this transaction.
 *
 * Both statements are pinned to their index, as a delete that scans could wait on a writer's
 * row (`DELETE` has no `skip locked`), and MariaDB (10.11) loses rows of a `skip locked` read
 * that goes through a sort (it answered none, or only those after the locked row): the pick
 * goes through the walked column's index (which also stops it after `limit` rows), the delete
 * joins the picked keys (`json_table`, typed as the key's columns) to the primary key, one
 * row each. The optimizer would scan instead for an `in` or `or` list on a small table.
 */
export async function mysqlDeleteBatch(
  knex: Knex,
  table: string,
  condition: string,
  bindings: readonly Knex.Value[],
  limit: number,
  cursor: BatchCursor,
): Promise<number> {
  const { column, from } = cursor;
  const { key, walkIndex } = await shapeOf(knex, table, column);
  const picked = await knex.transaction(async (trx) => {
    const rows = rowsOf<Record<string, unknown>>(
      await trx.raw(
        `select ${key.map((k) => quote(k.name)).join(', ')}, ${column} as justonce_at
           from ${table} ${walkIndex === undefined ? '' : `force index (${walkIndex})`}
          where ${condition} ${from === undefined ? '' : `and ${column} >= ?`}
          order by ${column}
          limit ?
          for update skip locked`,
        [...bindings, ...(from === undefined ? [] : [from]), limit],
      ),
    );
    if (rows.length > 0) {
      const columns = key.map((k, i) => `${quote(k.name)} ${k.type} path '$[${i}]'`);
      const on = key.map((k) => `t.${quote(k.name)} = p.${quote(k.name)}`).join(' and ');
      await trx.raw(
        `delete t from json_table(?, '$[*]' columns (${columns.join(', ')})) as p
           straight_join ${table} as t on ${on}`,
        [JSON.stringify(rows.map((row) => key.map((k) => jsonValue(row[k.name]))))],
      );
    }
    return rows;
  });
  for (const row of picked) {
    const at = row.justonce_at;
    const value = at instanceof Date ? at : new Date(String(at));
    if (cursor.from === undefined || value > cursor.from) cursor.from = value;
  }
  return picked.length;
}
