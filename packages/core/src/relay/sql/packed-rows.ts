import type { Knex } from 'knex';
import { rowsOf } from '../../store/migrate';
import { prepared, type StatementStore } from '../../store/prepared';
import type { ClaimedRow } from './claimed-row';
import { idArray } from './id-array';
import { statementCache } from '../../store/statement-cache';

/**
 * Payloads up to this many bytes travel packed; larger ones are read in a second statement.
 * Packing saves the relay CPU per row (one driver row and seven parsed fields per event cost
 * more than a handful of JSON arrays) for a little more of PostgreSQL's; the payload bytes
 * themselves cost the database more per byte when concatenated, so large payloads gain
 * nothing from it. The relay benchmark (`pnpm bench relay`) measures the trade.
 */
export const PACKED_PAYLOAD_MAX = 512;

/**
 * Wraps a statement whose rows have the claimed-row columns (`id`, `destination`,
 * `partition_key`, `message_id`, `headers`, `payload`, `attempts`) so that it returns one row:
 * each column as a JSON array in the statement's row order, and the payloads of at most
 * {@link PACKED_PAYLOAD_MAX} bytes concatenated in one `bytea` (`lengths` gives each one's
 * size, null for a payload left out). Rows with a null id (a statement's placeholder) come
 * back as nulls and are skipped. `extra` adds aggregate select items over the rows (alias
 * `z`). All aggregates of one statement see the rows in the same sequence, which is what
 * pairs the arrays up; the sequence is the statement's own order by, and callers check the
 * order they rely on anyway (see `row-order.ts`). @internal
 */
export function packedSql(rowsSql: string, extra = ''): string {
  const small = `octet_length(z.payload) <= ${PACKED_PAYLOAD_MAX}`;
  return `select json_agg(z.id::text)::text as ids,
      json_agg(z.destination)::text as destinations,
      json_agg(z.partition_key)::text as partition_keys,
      json_agg(z.message_id)::text as message_ids,
      json_agg(z.headers)::text as headers,
      json_agg(z.attempts)::text as attempts,
      json_agg(case when ${small} then octet_length(z.payload) end)::text as lengths,
      string_agg(z.payload, ''::bytea) filter (where ${small}) as payloads${
        extra === ''
          ? ''
          : `,
      ${extra}`
      }
    from (${rowsSql}) z`;
}

/** The one row a {@link packedSql} statement returns. @internal */
export interface PackedRow {
  readonly ids: string | null;
  readonly destinations: string | null;
  readonly partition_keys: string | null;
  readonly message_ids: string | null;
  readonly headers: string | null;
  readonly attempts: string | null;
  readonly lengths: string | null;
  readonly payloads: Uint8Array | null;
}

const EMPTY = new Uint8Array(0);

function array<T>(text: string | null): T[] {
  return text === null ? [] : (JSON.parse(text) as T[]);
}

/**
 * The claimed rows of a {@link packedSql} statement's result row, in its order. Payloads left
 * out for their size are read by id in `trx` (the rows are held by it, and payloads never
 * change). Each payload is a view into the statement's shared buffer. @internal
 */
export async function unpackRows(
  trx: Knex.Transaction,
  store: StatementStore,
  packed: PackedRow | undefined,
): Promise<ClaimedRow[]> {
  if (packed === undefined) return [];
  const ids = array<string | null>(packed.ids);
  const destinations = array<string>(packed.destinations);
  const keys = array<string | null>(packed.partition_keys);
  const messageIds = array<string>(packed.message_ids);
  const headers = array<Record<string, string>>(packed.headers);
  const attempts = array<number>(packed.attempts);
  const lengths = array<number | null>(packed.lengths);
  const payloads = packed.payloads ?? EMPTY;
  const rows: ClaimedRow[] = [];
  const large: number[] = [];
  let at = 0;
  for (let i = 0; i < ids.length; i += 1) {
    const id = ids[i];
    if (id === null || id === undefined) continue;
    const length = lengths[i];
    let payload: Uint8Array = EMPTY;
    if (length === null || length === undefined) large.push(rows.length);
    else {
      payload = payloads.subarray(at, at + length);
      at += length;
    }
    rows.push({
      id,
      destination: destinations[i]!,
      partition_key: keys[i] ?? null,
      message_id: messageIds[i]!,
      headers: headers[i]!,
      payload,
      attempts: attempts[i]!,
    });
  }
  if (at !== payloads.byteLength) {
    throw new Error(
      `packed outbox rows: ${payloads.byteLength} payload bytes, ${at} accounted for`,
    );
  }
  if (large.length > 0) await readLargePayloads(trx, store, rows, large);
  return rows;
}

const largePayloads = statementCache(
  (names, _variant: null) =>
    `select id::text as id, payload from ${names.table('outbox')} where id = any(?::bigint[])`,
);

async function readLargePayloads(
  trx: Knex.Transaction,
  store: StatementStore,
  rows: ClaimedRow[],
  positions: readonly number[],
): Promise<void> {
  const result = await prepared(store, trx, largePayloads(store.names, null), [
    idArray(positions.map((p) => rows[p]!.id)),
  ]);
  const byId = new Map<string, Uint8Array>();
  for (const row of rowsOf<{ id: string; payload: Uint8Array }>(result)) {
    byId.set(row.id, row.payload);
  }
  for (const p of positions) {
    const row = rows[p]!;
    const payload = byId.get(row.id);
    if (payload === undefined) throw new Error(`outbox row ${row.id} vanished while claimed`);
    rows[p] = { ...row, payload };
  }
}
