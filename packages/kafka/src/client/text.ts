import { isUtf8 } from 'node:buffer';

/**
 * Record bytes as text, without losing any. Kafka header values are bytes; a plain UTF-8
 * decode turns every invalid byte into U+FFFD, so two different message ids (or tenants)
 * could come out as one string and a record would be skipped as the other's duplicate.
 * Here each byte that is not part of a well-formed UTF-8 sequence becomes the lone low
 * surrogate U+DC80–U+DCFF (Python's `surrogateescape`): the mapping is one-to-one, and the
 * inbox refuses text with a lone surrogate as unstorable, so such a record is dead-lettered
 * (`INVALID_MESSAGE_ID`, `INVALID_SCOPE`, `INVALID_HEADERS`) instead of being handled under
 * a made-up id.
 */

const ESCAPE_BASE = 0xdc00;

/** The bytes as text; invalid UTF-8 bytes become U+DC80–U+DCFF. Never throws. @internal */
export function utf8Text(bytes: Uint8Array): string {
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  // The common case, valid UTF-8, is one native check and one native decode.
  if (isUtf8(buffer)) return buffer.toString('utf8');
  let out = '';
  let runStart = 0;
  let i = 0;
  while (i < buffer.length) {
    const n = sequenceLength(buffer, i);
    if (n > 0) {
      i += n;
      continue;
    }
    out += buffer.toString('utf8', runStart, i) + String.fromCharCode(ESCAPE_BASE + buffer[i]!);
    i += 1;
    runStart = i;
  }
  return out + buffer.toString('utf8', runStart, i);
}

/**
 * The bytes {@link utf8Text} decoded `text` from: the inverse of that mapping, for tests
 * and diagnostics. @internal
 */
export function utf8Bytes(text: string): Buffer {
  const parts: Buffer[] = [];
  let runStart = 0;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    const lowSurrogate = unit >= 0xdc00 && unit <= 0xdfff;
    const paired = lowSurrogate && i > 0 && isHighSurrogate(text.charCodeAt(i - 1));
    if (unit >= 0xdc80 && unit <= 0xdcff && !paired) {
      parts.push(Buffer.from(text.slice(runStart, i), 'utf8'), Buffer.of(unit - ESCAPE_BASE));
      runStart = i + 1;
    }
  }
  parts.push(Buffer.from(text.slice(runStart), 'utf8'));
  return Buffer.concat(parts);
}

function isHighSurrogate(unit: number): boolean {
  return unit >= 0xd800 && unit <= 0xdbff;
}

/**
 * Length of the well-formed UTF-8 sequence at `i` (Unicode, Table 3-7), or 0 when the byte
 * there does not start one: no overlong forms, no surrogates, nothing above U+10FFFF.
 */
function sequenceLength(b: Uint8Array, i: number): number {
  const first = b[i]!;
  if (first <= 0x7f) return 1;
  const within = (at: number, low: number, high: number): boolean => {
    const byte = b[i + at];
    return byte !== undefined && byte >= low && byte <= high;
  };
  const tail = (from: number, to: number): boolean => {
    for (let at = from; at <= to; at++) if (!within(at, 0x80, 0xbf)) return false;
    return true;
  };
  if (first >= 0xc2 && first <= 0xdf) return tail(1, 1) ? 2 : 0;
  if (first === 0xe0) return within(1, 0xa0, 0xbf) && tail(2, 2) ? 3 : 0;
  if ((first >= 0xe1 && first <= 0xec) || first === 0xee || first === 0xef) {
    return tail(1, 2) ? 3 : 0;
  }
  if (first === 0xed) return within(1, 0x80, 0x9f) && tail(2, 2) ? 3 : 0;
  if (first === 0xf0) return within(1, 0x90, 0xbf) && tail(2, 3) ? 4 : 0;
  if (first >= 0xf1 && first <= 0xf3) return tail(1, 3) ? 4 : 0;
  if (first === 0xf4) return within(1, 0x80, 0x8f) && tail(2, 3) ? 4 : 0;
  return 0;
}
