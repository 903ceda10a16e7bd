/**
 * What PostgreSQL can hold in a `text` or `jsonb` value. Its text types refuse U+0000
 * (22021, or 22P05 inside jsonb), the driver encodes a lone UTF-16 surrogate as U+FFFD, so
 * two different strings would be stored as one, and PGlite drops a leading U+FEFF on read. Keys (message ids, scopes, destinations)
 * that are not storable exactly are bad input; diagnostic text is made storable instead.
 */

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const LONE_SURROGATES = new RegExp(LONE_SURROGATE.source, 'g');

/** Why `value` cannot be stored as text exactly, or `undefined` when it can. @internal */
export function unstorableText(value: string): string | undefined {
  if (value.includes('\u0000')) return 'contains U+0000';
  if (LONE_SURROGATE.test(value)) return 'contains a lone UTF-16 surrogate';
  if (value.charCodeAt(0) === 0xfeff) {
    // Stored as given, but the embedded PGlite decodes every text value it returns with a
    // BOM-stripping decoder, so a key read back would no longer match the key written.
    return 'starts with U+FEFF (a byte-order mark), which PGlite drops when it reads text back';
  }
  return undefined;
}

/**
 * Why `value` cannot be written as text at all (U+0000) or not unchanged (a lone
 * surrogate), or `undefined`. Laxer than {@link unstorableText}: for values that are never
 * read back as text on their own, such as header values kept in JSON. @internal
 */
export function unwritableText(value: string): string | undefined {
  if (value.includes('\u0000')) return 'contains U+0000';
  if (LONE_SURROGATE.test(value)) return 'contains a lone UTF-16 surrogate';
  return undefined;
}

/** True when `value` has a UTF-16 surrogate without its pair (it has no exact UTF-8 bytes). @internal */
export function hasLoneSurrogate(value: string): boolean {
  return LONE_SURROGATE.test(value);
}

/** True when PostgreSQL (and PGlite) store `value` as text and give it back exactly. @internal */
export function isStorableText(value: string): boolean {
  return unstorableText(value) === undefined;
}

/**
 * A storable form of diagnostic text (an error message, a reason): U+0000 is written as the
 * six characters `\u0000` and a lone surrogate becomes U+FFFD. Lossy by design, never for
 * keys. @internal
 */
export function storableDiagnostic(value: string): string {
  if (unwritableText(value) === undefined) return value;
  return value.replaceAll('\u0000', '\\u0000').replace(LONE_SURROGATES, '\uFFFD');
}

/**
 * Text for any value a caller passed where text was expected, for keeping it in a dead letter:
 * `String(value)`, or the value's tag when even that throws (an object whose `toString` is
 * not a function). Never throws. @internal
 */
export function textOf(value: unknown): string {
  try {
    return String(value);
  } catch {
    return Object.prototype.toString.call(value);
  }
}

/**
 * JSON text for any value, for keeping it in a dead letter: `JSON.stringify`, or, where that
 * fails (a cycle, a BigInt, a throwing `toJSON`) or gives nothing (a function), the value as
 * {@link textOf} gives it, as a JSON string. Never throws. @internal
 */
export function jsonOf(value: unknown): string {
  try {
    const json = JSON.stringify(value);
    if (json !== undefined) return json;
  } catch {
    // fall through to the text form
  }
  return JSON.stringify(textOf(value));
}

/**
 * What a browser or a terminal would not show as written: the control characters (Unicode's
 * Cc, U+0000–U+001F but tab and newline, U+007F–U+009F; an escape sequence would drive the
 * terminal) and UTF-16 surrogates without their pair. A browser drops or replaces them, so an
 * operator could not see why a letter was refused.
 */
const INVISIBLE =
  // eslint-disable-next-line no-control-regex
  /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/**
 * `text` with every invisible character written as its JSON escape, `\u0000`: the form the
 * store's text columns use for U+0000. Tab and newline stay as they are. The dashboard and
 * the CLI show every stored text through it.
 */
export function visibleText(text: string): string {
  return text.replace(INVISIBLE, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
