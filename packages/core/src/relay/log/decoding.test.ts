import fc from 'fast-check';
import type { ClaimedRow } from '../sql/claimed-row';
import { byteaFromText, decodePgoutput } from './pgoutput';
import { nextBatch } from './session';
import type { LogTransaction } from './transactions';
import { TransactionAssembler } from './transactions';
import { decodeServerFrame, formatLsn, parseLsn, standbyStatus } from './wal-frames';

/** PostgreSQL's escape form of `bytea` (`bytea_output = escape`). */
function escapeForm(bytes: Uint8Array): string {
  let text = '';
  for (const b of bytes) {
    if (b === 0x5c) text += '\\\\';
    else if (b >= 0x20 && b < 0x7f) text += String.fromCharCode(b);
    else text += `\\${b.toString(8).padStart(3, '0')}`;
  }
  return text;
}

/** A `pgoutput` message built the way the server writes it. */
class Writer {
  private parts: Buffer[] = [];
  byte(code: string | number): this {
    this.parts.push(Buffer.from([typeof code === 'string' ? code.charCodeAt(0) : code]));
    return this;
  }
  int16(n: number): this {
    const b = Buffer.alloc(2);
    b.writeInt16BE(n);
    this.parts.push(b);
    return this;
  }
  int32(n: number): this {
    const b = Buffer.alloc(4);
    b.writeInt32BE(n);
    this.parts.push(b);
    return this;
  }
  int64(n: bigint): this {
    const b = Buffer.alloc(8);
    b.writeBigInt64BE(n);
    this.parts.push(b);
    return this;
  }
  cstring(s: string): this {
    this.parts.push(Buffer.from(`${s}\0`, 'utf8'));
    return this;
  }
  text(s: string): this {
    const bytes = Buffer.from(s, 'utf8');
    return this.byte('t').int32(bytes.length).raw(bytes);
  }
  raw(b: Buffer): this {
    this.parts.push(b);
    return this;
  }
  done(): Buffer {
    return Buffer.concat(this.parts);
  }
}

const COLUMNS = ['id', 'destination', 'partition_key', 'message_id', 'headers', 'payload', 'x'];

function relation(id: number, schema: string, table: string): Buffer {
  const w = new Writer().byte('R').int32(id).cstring(schema).cstring(table).byte('d');
  w.int16(COLUMNS.length);
  for (const name of COLUMNS) w.byte(0).cstring(name).int32(25).int32(-1);
  return w.done();
}

describe('pgoutput decoding', () => {
  it('reads bytea in both text forms, any bytes', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), (bytes) => {
        const hex = `\\x${Buffer.from(bytes).toString('hex')}`;
        expect(byteaFromText(hex).equals(Buffer.from(bytes))).toBe(true);
        expect(byteaFromText(escapeForm(bytes)).equals(Buffer.from(bytes))).toBe(true);
      }),
    );
  });

  it('assembles a committed transaction of outbox inserts, skipping other tables, nulls kept', () => {
    const committed: LogTransaction[] = [];
    const assembler = new TransactionAssembler('p', 'jo', 'outbox', (t) => committed.push(t));
    assembler.push(new Writer().byte('B').int64(100n).int64(0n).int32(7).done());
    assembler.push(relation(1, 'jo', 'outbox'));
    assembler.push(relation(2, 'jo', 'other'));
    const insert = (rel: number, key: string | null, id: string): Buffer => {
      const w = new Writer().byte('I').int32(rel).byte('N').int16(COLUMNS.length);
      w.text(id).text('d');
      if (key === null) w.byte('n');
      else w.text(key);
      return w.text(`m-${id}`).text('{"a":"é"}').text('\\x00ff').byte('u').done();
    };
    assembler.push(insert(1, 'k', '1'));
    assembler.push(insert(2, 'k', '2'));
    assembler.push(insert(1, null, '3'));
    assembler.push(
      new Writer().byte('M').byte(1).int64(5n).cstring('p').int32(2).raw(Buffer.from('t1')).done(),
    );
    expect(assembler.inTransaction).toBe(true);
    assembler.push(new Writer().byte('C').byte(0).int64(90n).int64(120n).int64(0n).done());
    expect(committed).toHaveLength(1);
    const [t] = committed;
    expect(t!.endLsn).toBe(120n);
    expect(t!.commitTimeMs).toBe(Date.UTC(2000, 0, 1));
    expect(t!.markers).toEqual(['t1']);
    expect(t!.events.map((e) => [e.id, e.partition_key, e.headers])).toEqual([
      ['1', 'k', '{"a":"é"}'],
      ['3', null, '{"a":"é"}'],
    ]);
    expect(Buffer.from(t!.events[0]!.payload)).toEqual(Buffer.from([0, 255]));
  });

  it('refuses a message cut short, and passes over messages it does not use', () => {
    expect(() => decodePgoutput(Buffer.from('B\0\0'))).toThrow(/ends early/);
    expect(decodePgoutput(Buffer.from('Y'))).toEqual({ tag: 'other', code: 'Y' });
  });

  it('frames: XLogData, keepalive, standby status and LSN text', () => {
    const data = Buffer.concat([Buffer.from('w'), Buffer.alloc(24), Buffer.from('B')]);
    data.writeBigUInt64BE(0x16b374d848n, 1);
    expect(decodeServerFrame(data)).toMatchObject({ kind: 'data', start: 0x16b374d848n });
    const keepalive = Buffer.alloc(18);
    keepalive[0] = 0x6b;
    keepalive.writeBigUInt64BE(42n, 1);
    keepalive[17] = 1;
    expect(decodeServerFrame(keepalive)).toEqual({
      kind: 'keepalive',
      walEnd: 42n,
      replyRequested: true,
    });
    const status = standbyStatus(0x16b374d848n, true, Date.UTC(2000, 0, 1));
    expect(status[0]).toBe(0x72);
    expect(status.readBigUInt64BE(9)).toBe(0x16b374d848n);
    expect(status.readBigInt64BE(25)).toBe(0n);
    expect(status[33]).toBe(1);
    expect(formatLsn(0x16b374d848n)).toBe('16/B374D848');
    expect(parseLsn('16/B374D848')).toBe(0x16b374d848n);
    expect(parseLsn('nope')).toBeNull();
  });
});

describe('batches of transactions', () => {
  const events = (n: number, from = 0): ClaimedRow[] =>
    Array.from({ length: n }, (_, i) => ({
      id: String(from + i),
      destination: 'd',
      partition_key: 'k',
      message_id: `m${from + i}`,
      headers: '{}',
      payload: new Uint8Array(0),
      attempts: 0,
    }));
  const tx = (n: number, from = 0): LogTransaction => ({
    endLsn: BigInt(from + n),
    commitTimeMs: 0,
    events: events(n, from),
    markers: [],
  });

  it('takes whole transactions while they fit, and splits one larger than a batch', () => {
    const queue = [tx(3, 0), tx(0, 3), tx(4, 3), tx(10, 7)];
    expect(nextBatch(queue, 0, 8)).toMatchObject({ complete: 3, headDone: 0 });
    expect(nextBatch(queue, 0, 8).rows.map((r) => r.id)).toEqual([
      '0',
      '1',
      '2',
      '3',
      '4',
      '5',
      '6',
    ]);
    // The large one alone: in parts, none complete until its last.
    const large = [tx(10, 7), tx(1, 17)];
    const first = nextBatch(large, 0, 4);
    expect(first).toMatchObject({ complete: 0, headDone: 4 });
    const second = nextBatch(large, 4, 4);
    expect(second).toMatchObject({ complete: 0, headDone: 8 });
    const last = nextBatch(large, 8, 4);
    expect(last.rows.map((r) => r.id)).toEqual(['15', '16', '17']);
    expect(last).toMatchObject({ complete: 2, headDone: 0 });
  });

  it('covers every event once, in order, whatever the sizes', () => {
    fc.assert(
      fc.property(
        fc.array(fc.nat({ max: 12 }), { minLength: 1, maxLength: 12 }),
        fc.integer({ min: 1, max: 9 }),
        (sizes, batchSize) => {
          let from = 0;
          const queue = sizes.map((n) => {
            const t = tx(n, from);
            from += n;
            return t;
          });
          const seen: string[] = [];
          let headDone = 0;
          while (queue.length > 0) {
            const batch = nextBatch(queue, headDone, batchSize);
            expect(batch.rows.length).toBeLessThanOrEqual(batchSize);
            seen.push(...batch.rows.map((r) => r.id));
            queue.splice(0, batch.complete);
            headDone = batch.headDone;
          }
          expect(seen).toEqual(Array.from({ length: from }, (_, i) => String(i)));
        },
      ),
    );
  });
});
