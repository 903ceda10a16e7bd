/**
 * How the publisher writes a payload into the SQS message body, which must be text:
 * - `utf8` — the payload as UTF-8 text; a payload that is not valid UTF-8, or holds a
 *   character SQS rejects, fails with a typed error.
 * - `base64` — the payload base64-encoded, marked with the {@link BODY_ENCODING_ATTRIBUTE}
 *   attribute (it takes one of the 10 attribute slots); the consumer decodes it back to bytes.
 */
export type BodyEncoding = 'utf8' | 'base64';

/** Message attribute that marks a base64 body (value `base64`). */
export const BODY_ENCODING_ATTRIBUTE = 'body-encoding';

/** Characters SQS does not accept in a message body (outside the XML character range). */
const FORBIDDEN = new RegExp(
  '[^\\t\\n\\r\\u0020-\\uD7FF\\uE000-\\uFFFD\\u{10000}-\\u{10FFFF}]',
  'u',
);

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * The body text for `payload`, or a description of why it cannot be sent as `utf8`.
 * @internal
 */
export function encodeBody(
  payload: Uint8Array,
  encoding: BodyEncoding,
): { ok: true; body: string } | { ok: false; problem: string } {
  if (payload.byteLength === 0) return { ok: false, problem: 'SQS does not accept an empty body' };
  if (encoding === 'base64') return { ok: true, body: Buffer.from(payload).toString('base64') };
  let text: string;
  try {
    text = strictUtf8.decode(payload);
  } catch {
    return { ok: false, problem: 'the payload is not valid UTF-8 (use bodyEncoding: base64)' };
  }
  const bad = FORBIDDEN.exec(text);
  if (bad) {
    const code = bad[0].codePointAt(0) ?? 0;
    return {
      ok: false,
      problem: `the payload holds U+${code.toString(16).toUpperCase().padStart(4, '0')}, which SQS rejects (use bodyEncoding: base64)`,
    };
  }
  return { ok: true, body: text };
}

/**
 * The body a consumer hands to the inbox: bytes when the message says base64, else the text.
 * A body that is not a string (SQS never sends one) is returned unchanged, for the inbox to
 * dead-letter as `INVALID_BODY`, rather than throw.
 */
export function decodeBody(
  body: string,
  headers: Readonly<Record<string, string>>,
): string | Uint8Array {
  if (typeof body !== 'string') return body;
  return Object.hasOwn(headers, BODY_ENCODING_ATTRIBUTE) &&
    headers[BODY_ENCODING_ATTRIBUTE] === 'base64'
    ? Buffer.from(body, 'base64')
    : body;
}
