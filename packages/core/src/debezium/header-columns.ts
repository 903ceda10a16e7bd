import { ConfigurationError } from '../errors';

/**
 * The headers justonce itself writes into an event's `headers` column (see `outbox/encode.ts`)
 * that a consumer reads: the payload's type and encoding, the causation chain, W3C trace
 * context and the tenant. `message-id` travels from its own column.
 */
export const STANDARD_OUTBOX_HEADERS = [
  'type',
  'content-type',
  'causation-id',
  'correlation-id',
  'traceparent',
  'tracestate',
  'tenant',
] as const;

/** Header names a column can carry: no separator of the event router's field list. */
const HEADER_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

/** One header that travels through a column of its own. @internal */
export interface HeaderColumn {
  /** The Kafka header's name, as in the outbox's `headers` JSON. */
  readonly header: string;
  /** The outbox column the trigger copies it into. */
  readonly column: string;
}

/**
 * The header a column holds: `header_` and the name in lower case with every character other
 * than a-z and 0-9 as `_` (`causation-id` → `header_causation_id`).
 */
function columnOf(header: string): string {
  return `header_${header.toLowerCase().replace(/[^a-z0-9]/g, '_')}`;
}

/**
 * PostgreSQL's order of the keys of a `jsonb` object, which is the order the polling relay
 * reads an event's headers in and so publishes them in: shorter keys first, keys of one
 * length by their bytes.
 */
function jsonbKeyOrder(a: string, b: string): number {
  const byLength = Buffer.byteLength(a) - Buffer.byteLength(b);
  return byLength !== 0 ? byLength : Buffer.compare(Buffer.from(a), Buffer.from(b));
}

/**
 * The standard headers and `extra` (validated), with their columns, in the order the polling
 * relay publishes them; `message-id` in its place among them, from the `message_id` column.
 * @internal
 */
export function headerColumns(extra: unknown): HeaderColumn[] {
  if (extra !== undefined && !Array.isArray(extra)) {
    throw new ConfigurationError('headers must be an array of header names', {
      headers: typeof extra,
    });
  }
  const names = new Set<string>([...STANDARD_OUTBOX_HEADERS, 'message-id']);
  for (const name of (extra ?? []) as unknown[]) {
    if (typeof name !== 'string' || !HEADER_NAME.test(name)) {
      throw new ConfigurationError(
        `header ${JSON.stringify(name)} cannot have a column: use letters, digits, '.', '_' and '-', starting with a letter or digit`,
        { header: name },
      );
    }
    names.add(name);
  }
  const byColumn = new Map<string, string>();
  const columns: HeaderColumn[] = [];
  for (const header of [...names].sort(jsonbKeyOrder)) {
    const column = header === 'message-id' ? 'message_id' : columnOf(header);
    const other = byColumn.get(column);
    if (other !== undefined) {
      throw new ConfigurationError(
        `headers ${JSON.stringify(other)} and ${JSON.stringify(header)} would share the column ${column}`,
        { headers: [other, header] },
      );
    }
    if (column.length > 63) {
      throw new ConfigurationError(`header ${JSON.stringify(header)} is too long for a column`, {
        header,
      });
    }
    byColumn.set(column, header);
    columns.push({ header, column });
  }
  return columns;
}
