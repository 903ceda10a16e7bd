/**
 * The frames of PostgreSQL's streaming replication protocol inside CopyData: the server's
 * XLogData ('w') and primary keepalive ('k'), and the client's standby status update ('r').
 * LSNs are unsigned 64-bit positions in the WAL, kept as `bigint`. @internal
 */

/** Microseconds between the Unix epoch and PostgreSQL's epoch (2000-01-01 UTC). */
const PG_EPOCH_US = 946_684_800_000_000n;

/** A frame the server sent on the replication stream. @internal */
export type ServerFrame =
  | {
      readonly kind: 'data';
      readonly start: bigint;
      readonly walEnd: bigint;
      readonly body: Buffer;
    }
  | { readonly kind: 'keepalive'; readonly walEnd: bigint; readonly replyRequested: boolean };

/** Decodes one CopyData chunk of the stream; `null` for a frame this client has no use for. */
export function decodeServerFrame(chunk: Buffer): ServerFrame | null {
  const tag = chunk[0];
  if (tag === 0x77 && chunk.length >= 25) {
    // 'w': start LSN, current WAL end, send time, then the output plugin's message.
    return {
      kind: 'data',
      start: chunk.readBigUInt64BE(1),
      walEnd: chunk.readBigUInt64BE(9),
      body: chunk.subarray(25),
    };
  }
  if (tag === 0x6b && chunk.length >= 18) {
    // 'k': current WAL end, send time, and whether the server wants an answer now.
    return {
      kind: 'keepalive',
      walEnd: chunk.readBigUInt64BE(1),
      replyRequested: chunk[17] === 1,
    };
  }
  return null;
}

/**
 * A standby status update ('r') reporting `lsn` as written, flushed and applied: for a
 * logical slot the flushed position becomes its `confirmed_flush_lsn`, before which the
 * server never sends again and keeps no WAL. `ping` asks for a keepalive in answer.
 */
export function standbyStatus(lsn: bigint, ping = false, now: number = Date.now()): Buffer {
  const frame = Buffer.alloc(34);
  frame[0] = 0x72;
  frame.writeBigUInt64BE(lsn, 1);
  frame.writeBigUInt64BE(lsn, 9);
  frame.writeBigUInt64BE(lsn, 17);
  frame.writeBigInt64BE(BigInt(Math.floor(now)) * 1000n - PG_EPOCH_US, 25);
  frame[33] = ping ? 1 : 0;
  return frame;
}

/** A PostgreSQL timestamp (microseconds since 2000-01-01) as Unix milliseconds. */
export function pgTimeToMs(microseconds: bigint): number {
  return Number((microseconds + PG_EPOCH_US) / 1000n);
}

/** An LSN as PostgreSQL writes it (`16/B374D848`). */
export function formatLsn(lsn: bigint): string {
  return `${(lsn >> 32n).toString(16).toUpperCase()}/${(lsn & 0xffffffffn).toString(16).toUpperCase()}`;
}

/** Parses PostgreSQL's text form of an LSN; `null` for anything else. */
export function parseLsn(text: string | null | undefined): bigint | null {
  const match = /^([0-9A-Fa-f]{1,8})\/([0-9A-Fa-f]{1,8})$/.exec(text ?? '');
  if (match === null) return null;
  return (BigInt(`0x${match[1]}`) << 32n) | BigInt(`0x${match[2]}`);
}
