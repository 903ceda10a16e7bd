import { runSql, type SqlRunner } from '../transactions/sql';
import type { MigrationNames } from '../store/migration';
import { DuplicateMessageIdError } from './errors/duplicate-message-id-error';
import type { StoreDistribution } from '../store/distribution';
import type { EncodedEvent } from './encode';
import { deleteInserted, insertEvents } from './sql/insert';

/** Rows per insert statement, well below PostgreSQL's limit of 65 535 bindings. */
const ROWS_PER_STATEMENT = 1000;
/**
 * Bytes of values per insert statement, far below PostgreSQL's 1 GiB message limit: a call
 * of many large payloads is split into several statements rather than refused by the server.
 */
const BYTES_PER_STATEMENT = 32 * 1024 * 1024;
/** Savepoint around a call that needs more than one statement (see {@link insertAll}). */
const SAVEPOINT = 'justonce_outbox_add';

/** @internal Splits a call's events into insert statements, by row count and by size. */
export function statements(events: readonly EncodedEvent[]): EncodedEvent[][] {
  const chunks: EncodedEvent[][] = [];
  let current: EncodedEvent[] = [];
  let bytes = 0;
  for (const e of events) {
    const size =
      e.payload.byteLength +
      e.headersJson.length +
      e.destination.length +
      e.messageId.length +
      (e.key?.length ?? 0);
    if (
      current.length > 0 &&
      (current.length === ROWS_PER_STATEMENT || bytes + size > BYTES_PER_STATEMENT)
    ) {
      chunks.push(current);
      current = [];
      bytes = 0;
    }
    current.push(e);
    bytes += size;
  }
  if (current.length > 0) chunks.push(current);
  return chunks;
}

/**
 * Inserts one call's events, all or nothing, and throws {@link DuplicateMessageIdError} (with
 * nothing of the call left in `tx`, which stays usable) when an id is already in the table.
 *
 * One statement, the usual case, is atomic by itself and costs no extra round trip: the rows
 * it did insert before a duplicate was found are deleted by their row ids. Several statements
 * run inside a savepoint, so that a duplicate, or any other failure, in a later statement
 * takes the earlier ones back too (and a database error leaves the caller's transaction
 * usable); two more round trips are nothing next to the 1000+ rows of such a call.
 *
 * @internal
 */
export async function insertAll(
  tx: SqlRunner,
  names: MigrationNames,
  events: readonly EncodedEvent[],
  channel: string | null,
  distribution: StoreDistribution = 'none',
): Promise<void> {
  const chunks = statements(events);
  const missing = (inserted: ReadonlyMap<string, string>): string[] =>
    events.map((e) => e.messageId).filter((id) => !inserted.has(id));
  if (chunks.length === 1) {
    const inserted = await insertEvents(tx, names, events, channel, distribution);
    if (inserted.size === events.length) return;
    await deleteInserted(tx, names, [...inserted.values()]);
    throw new DuplicateMessageIdError(missing(inserted));
  }
  const inserted = new Map<string, string>();
  await runSql(tx, `savepoint ${SAVEPOINT}`, []);
  try {
    for (const [i, chunk] of chunks.entries()) {
      const rows = await insertEvents(tx, names, chunk, i === 0 ? channel : null, distribution);
      for (const [id, rowId] of rows) inserted.set(id, rowId);
    }
  } catch (error) {
    await runSql(tx, `rollback to savepoint ${SAVEPOINT}`, []).catch(() => undefined);
    await runSql(tx, `release savepoint ${SAVEPOINT}`, []).catch(() => undefined);
    throw error;
  }
  if (inserted.size !== events.length) {
    await runSql(tx, `rollback to savepoint ${SAVEPOINT}`, []);
    await runSql(tx, `release savepoint ${SAVEPOINT}`, []);
    throw new DuplicateMessageIdError(missing(inserted));
  }
  await runSql(tx, `release savepoint ${SAVEPOINT}`, []);
}
