import { parseItem, parseList } from 'structured-headers';

/** Why an `Idempotency-Key` field value was refused; each is a 400 problem. */
export type KeyRefusal =
  /** The field was sent more than once, or its value lists several members. */
  | 'several-values'
  /** The field is present with an empty value, or is the empty string `""`. */
  | 'empty'
  /** A quoted value that is not one Structured Field string (a bad escape, no closing quote). */
  | 'syntax'
  /** A character outside printable ASCII (U+0020 to U+007E). */
  | 'characters'
  /** Longer than the route's `maxKeyLength`. */
  | 'too-long';

/** The result of {@link parseIdempotencyKey}. It never throws. */
export type ParsedKey =
  /** No `Idempotency-Key` field in the request. */
  | { readonly kind: 'absent' }
  /**
   * A usable key. `form` says how it was written: `sf-string` for the draft's quoted
   * Structured Field string, `bare` for the unquoted form many payment APIs accept.
   */
  | { readonly kind: 'key'; readonly key: string; readonly form: 'sf-string' | 'bare' }
  /** A field that cannot be used as a key. */
  | { readonly kind: 'invalid'; readonly reason: KeyRefusal };

/** Printable ASCII, the characters a key may have (a Structured Field string's). */
const PRINTABLE_ASCII = /^[\x20-\x7e]*$/;

/**
 * Reads the `Idempotency-Key` request header field. `field` is the field as the server got
 * it: `undefined` when absent, one string (field lines already joined with `, `, as Fetch's
 * `Headers.get` and Node's `req.headers` do), or one string per field line (Node's
 * `req.headersDistinct`).
 *
 * Two forms are accepted: the draft's Structured Field string (`"8e03978e-…"`, RFC 9651
 * §3.3.3; its parameters are ignored, as RFC 9651 lets a recipient do) and the bare value
 * payment APIs use (`8e03978e-…`). Either way the key is 1 to `maxKeyLength` characters of
 * printable ASCII. A bare value with a comma is refused as `several-values`: HTTP joins
 * repeated field lines with commas, so the key it would stand for is ambiguous.
 *
 * Pure, and total: whatever the input, the answer is a {@link ParsedKey}, never an exception.
 */
export function parseIdempotencyKey(
  field: string | readonly string[] | undefined,
  maxKeyLength = 255,
): ParsedKey {
  if (field === undefined) return { kind: 'absent' };
  let value: string;
  if (typeof field === 'string') {
    value = field;
  } else if (field.length === 0) {
    return { kind: 'absent' };
  } else if (field.length > 1) {
    return invalid('several-values');
  } else {
    value = field[0] ?? '';
  }
  // Optional whitespace around a field value is not part of it (RFC 9110 §5.5).
  const trimmed = value.replace(/^[ \t]+|[ \t]+$/g, '');
  if (trimmed === '') return invalid('empty');
  const parsed = trimmed.startsWith('"') ? parseQuoted(trimmed) : parseBare(trimmed);
  if (parsed.kind !== 'key') return parsed;
  if (parsed.key.length > maxKeyLength) return invalid('too-long');
  return parsed;
}

/** The draft's form: one Structured Field item whose value is a string. */
function parseQuoted(value: string): ParsedKey {
  if (!PRINTABLE_ASCII.test(value)) return invalid('characters');
  let key: unknown;
  try {
    key = parseItem(value)[0];
  } catch {
    return invalid(isSeveralMembers(value) ? 'several-values' : 'syntax');
  }
  if (typeof key !== 'string') return invalid('syntax');
  if (key === '') return invalid('empty');
  return { kind: 'key', key, form: 'sf-string' };
}

/** The unquoted form: the value itself, printable ASCII without a comma. */
function parseBare(value: string): ParsedKey {
  if (!PRINTABLE_ASCII.test(value)) return invalid('characters');
  if (value.includes(',')) return invalid('several-values');
  return { kind: 'key', key: value, form: 'bare' };
}

/** True when `value` is a list of more than one Structured Field member (`"a", "b"`). */
function isSeveralMembers(value: string): boolean {
  try {
    return parseList(value).length > 1;
  } catch {
    return false;
  }
}

function invalid(reason: KeyRefusal): ParsedKey {
  return { kind: 'invalid', reason };
}
