import type { ClaimedRow } from '../sql/claimed-row';
import { byteaFromText, decodePgoutput, type TupleValue } from './pgoutput';
import { pgTimeToMs } from './wal-frames';

/** One committed transaction's outbox events, in insert order. @internal */
export interface LogTransaction {
  /** Where its commit record ends: confirming this position confirms the transaction. */
  readonly endLsn: bigint;
  /** When it committed (Unix milliseconds). */
  readonly commitTimeMs: number;
  /** Its outbox rows, as the polling relay would have claimed them (`attempts` 0). */
  readonly events: ClaimedRow[];
  /** The tokens of the relay's markers it carries (see `writeMarker`). */
  readonly markers: string[];
}

/** The outbox columns an event is made of. */
const COLUMNS = ['id', 'destination', 'partition_key', 'message_id', 'headers', 'payload'] as const;
type Column = (typeof COLUMNS)[number];

/**
 * Turns the decoded `pgoutput` stream into committed transactions: remembers each relation's
 * columns, keeps the inserts into the outbox table (`schema`.`table`) and the contents of
 * transactional logical messages of `prefix` between a Begin and its Commit, and hands each transaction to `onCommit` at its Commit. Inserts into any other
 * table the publication might name are skipped. @internal
 */
export class TransactionAssembler {
  private readonly relations = new Map<number, Map<Column, number> | null>();
  private open: { events: ClaimedRow[]; markers: string[] } | null = null;

  constructor(
    private readonly prefix: string,
    private readonly schema: string,
    private readonly table: string,
    private readonly onCommit: (transaction: LogTransaction) => void,
  ) {}

  /** Whether a transaction has begun and not yet committed. */
  get inTransaction(): boolean {
    return this.open !== null;
  }

  /** Feeds one `pgoutput` message. */
  push(body: Buffer): void {
    const message = decodePgoutput(body);
    switch (message.tag) {
      case 'begin':
        this.open = { events: [], markers: [] };
        return;
      case 'relation':
        this.relations.set(message.id, this.columnsOf(message));
        return;
      case 'insert': {
        const columns = this.relations.get(message.relation);
        if (columns === undefined) {
          throw new Error(
            `pgoutput insert into relation ${message.relation} before its Relation message`,
          );
        }
        if (columns === null) return;
        if (this.open === null) throw new Error('pgoutput insert outside a transaction');
        this.open.events.push(toRow(columns, message.values));
        return;
      }
      case 'message':
        if (message.transactional && message.prefix === this.prefix && this.open !== null) {
          this.open.markers.push(message.content.toString('utf8'));
        }
        return;
      case 'commit': {
        const { events, markers } = this.open ?? { events: [], markers: [] };
        this.open = null;
        const commitTimeMs = pgTimeToMs(message.commitTime);
        this.onCommit({ endLsn: message.endLsn, commitTimeMs, events, markers });
        return;
      }
      default:
        return;
    }
  }

  /** Forgets a transaction cut off by a lost connection; the server sends it again. */
  reset(): void {
    this.open = null;
  }

  private columnsOf(message: {
    namespace: string;
    name: string;
    columns: readonly string[];
  }): Map<Column, number> | null {
    if (message.namespace !== this.schema || message.name !== this.table) return null;
    const positions = new Map<Column, number>();
    for (const column of COLUMNS) {
      const at = message.columns.indexOf(column);
      if (at < 0) throw new Error(`the outbox's relation has no column ${column}`);
      positions.set(column, at);
    }
    return positions;
  }
}

/** One inserted tuple as the row the relay publishes. */
function toRow(columns: Map<Column, number>, values: readonly TupleValue[]): ClaimedRow {
  const text = (column: Column): string | null => {
    const value = values[columns.get(column)!];
    if (value === undefined) throw new Error(`the outbox insert has no value for ${column}`);
    // An insert carries every value: only updates leave TOASTed ones out.
    if (value !== null && typeof value !== 'string') {
      throw new Error(`the outbox insert left ${column} out (unchanged TOAST value)`);
    }
    return value;
  };
  const required = (column: Column): string => {
    const value = text(column);
    if (value === null) throw new Error(`the outbox insert has a null ${column}`);
    return value;
  };
  return {
    id: required('id'),
    destination: required('destination'),
    partition_key: text('partition_key'),
    message_id: required('message_id'),
    headers: required('headers'),
    payload: byteaFromText(required('payload')),
    attempts: 0,
  };
}
