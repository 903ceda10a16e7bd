import { createHash } from 'node:crypto';

/** Format version mixed into every fingerprint, so the encoding can change safely later. */
const VERSION = 'justonce-fingerprint-v1';

/** The body as bytes: strings as UTF-8, bytes unchanged (no copy). */
export function bodyBytes(body: Uint8Array | string): Uint8Array {
  return typeof body === 'string' ? Buffer.from(body, 'utf8') : body;
}

/** The value of a header, matched without regard to case; `undefined` when absent. */
function headerValue(headers: Readonly<Record<string, string>>, lowerName: string): unknown {
  if (Object.prototype.hasOwnProperty.call(headers, lowerName)) return headers[lowerName];
  for (const [name, value] of Object.entries(headers)) {
    if (name.toLowerCase() === lowerName) return value;
  }
  return undefined;
}

/**
 * The payload fingerprint: SHA-256 (hex) over a canonical encoding of the named headers
 * and the body bytes. Header names are lower-cased and sorted (the caller passes them so),
 * an absent header differs from an empty one, and every part is length-prefixed, so no two
 * different inputs share an encoding.
 */
export function fingerprint(
  body: Uint8Array,
  headers: Readonly<Record<string, string>>,
  headerNames: readonly string[],
): string {
  const hash = createHash('sha256').update(VERSION);
  const named = headerNames.map((name) => {
    const value = headerValue(headers, name);
    return [name, value === undefined ? null : String(value)];
  });
  const encodedHeaders = Buffer.from(JSON.stringify(named), 'utf8');
  const lengths = Buffer.alloc(16);
  lengths.writeBigUInt64BE(BigInt(encodedHeaders.byteLength), 0);
  lengths.writeBigUInt64BE(BigInt(body.byteLength), 8);
  return hash.update(lengths).update(encodedHeaders).update(body).digest('hex');
}
