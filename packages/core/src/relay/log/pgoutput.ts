/**
 * Decoding of the `pgoutput` plugin's messages, protocol version 1 with text tuples (the
 * format PostgreSQL 10 and later send when no `binary` option is asked for). The relay needs
 * Begin, Relation, Insert, Commit and logical messages (its markers); every other message (Origin, Type, Update, Delete,
 * Truncate) is reported as `other` and skipped. @internal
 */

/** One column of a tuple: its text, SQL NULL, or a TOASTed value the change left unchanged. */
export type TupleValue = string | null | { readonly unchanged: true };

/** A decoded `pgoutput` message. @internal */
export type PgoutputMessage =
  | {
      readonly tag: 'begin';
      readonly finalLsn: bigint;
      readonly commitTime: bigint;
      readonly xid: number;
    }
  | {
      readonly tag: 'commit';
      readonly commitLsn: bigint;
      readonly endLsn: bigint;
      readonly commitTime: bigint;
    }
  | {
      readonly tag: 'relation';
      readonly id: number;
      readonly namespace: string;
      readonly name: string;
      readonly columns: readonly string[];
    }
  | { readonly tag: 'insert'; readonly relation: number; readonly values: readonly TupleValue[] }
  | {
      readonly tag: 'message';
      readonly transactional: boolean;
      readonly prefix: string;
      readonly content: Buffer;
    }
  | { readonly tag: 'other'; readonly code: string };

const UNCHANGED = Object.freeze({ unchanged: true as const });

/** A cursor over one message's bytes; every read checks the bounds. */
class Reader {
  private at = 0;
  constructor(private readonly buffer: Buffer) {}

  private need(bytes: number): number {
    const at = this.at;
    if (at + bytes > this.buffer.length) {
      throw new Error(`pgoutput message ends early: needs ${bytes} bytes at ${at}`);
    }
    this.at += bytes;
    return at;
  }
  byte(): number {
    return this.buffer[this.need(1)]!;
  }
  int16(): number {
    return this.buffer.readInt16BE(this.need(2));
  }
  int32(): number {
    return this.buffer.readInt32BE(this.need(4));
  }
  uint32(): number {
    return this.buffer.readUInt32BE(this.need(4));
  }
  uint64(): bigint {
    return this.buffer.readBigUInt64BE(this.need(8));
  }
  int64(): bigint {
    return this.buffer.readBigInt64BE(this.need(8));
  }
  /** A NUL-terminated string. */
  cstring(): string {
    const end = this.buffer.indexOf(0, this.at);
    if (end < 0) throw new Error('pgoutput message ends inside a string');
    const text = this.buffer.toString('utf8', this.at, end);
    this.at = end + 1;
    return text;
  }
  bytes(length: number): Buffer {
    const at = this.need(length);
    return this.buffer.subarray(at, at + length);
  }
  text(length: number): string {
    const at = this.need(length);
    return this.buffer.toString('utf8', at, at + length);
  }
}

/** Reads TupleData: a column count, then per column its kind and, for text, its bytes. */
function readTuple(reader: Reader): TupleValue[] {
  const count = reader.int16();
  const values: TupleValue[] = [];
  for (let i = 0; i < count; i += 1) {
    const kind = String.fromCharCode(reader.byte());
    if (kind === 'n') values.push(null);
    else if (kind === 'u') values.push(UNCHANGED);
    else if (kind === 't') values.push(reader.text(reader.int32()));
    else throw new Error(`pgoutput tuple column of unknown kind ${JSON.stringify(kind)}`);
  }
  return values;
}

/** Decodes one `pgoutput` message (the body of an XLogData frame). @internal */
export function decodePgoutput(body: Buffer): PgoutputMessage {
  const reader = new Reader(body);
  const code = String.fromCharCode(reader.byte());
  switch (code) {
    case 'B':
      return {
        tag: 'begin',
        finalLsn: reader.uint64(),
        commitTime: reader.int64(),
        xid: reader.uint32(),
      };
    case 'C': {
      reader.byte(); // flags, unused
      return {
        tag: 'commit',
        commitLsn: reader.uint64(),
        endLsn: reader.uint64(),
        commitTime: reader.int64(),
      };
    }
    case 'R': {
      const id = reader.uint32();
      const namespace = reader.cstring();
      const name = reader.cstring();
      reader.byte(); // replica identity
      const count = reader.int16();
      const columns: string[] = [];
      for (let i = 0; i < count; i += 1) {
        reader.byte(); // flags (part of the key)
        columns.push(reader.cstring());
        reader.int32(); // type oid
        reader.int32(); // type modifier
      }
      return { tag: 'relation', id, namespace, name, columns };
    }
    case 'I': {
      const relation = reader.uint32();
      const kind = String.fromCharCode(reader.byte());
      if (kind !== 'N') throw new Error(`pgoutput insert without a new tuple (${kind})`);
      return { tag: 'insert', relation, values: readTuple(reader) };
    }
    case 'M': {
      const transactional = (reader.byte() & 1) === 1;
      reader.uint64(); // its LSN
      const prefix = reader.cstring();
      return { tag: 'message', transactional, prefix, content: reader.bytes(reader.int32()) };
    }
    default:
      return { tag: 'other', code };
  }
}

/**
 * A `bytea` column in its text form: `\x` followed by hex digits (`bytea_output = hex`, the
 * default), or the escape form, where `\\` is a backslash and `\nnn` an octal byte. @internal
 */
export function byteaFromText(text: string): Buffer {
  if (text.startsWith('\\x')) return Buffer.from(text.slice(2), 'hex');
  const bytes: number[] = [];
  for (let i = 0; i < text.length;) {
    const c = text.charCodeAt(i);
    if (c !== 0x5c) {
      bytes.push(c);
      i += 1;
    } else if (text[i + 1] === '\\') {
      bytes.push(0x5c);
      i += 2;
    } else {
      bytes.push(parseInt(text.slice(i + 1, i + 4), 8));
      i += 4;
    }
  }
  return Buffer.from(bytes);
}
