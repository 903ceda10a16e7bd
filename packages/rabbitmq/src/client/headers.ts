/**
 * AMQP header tables carry typed values (strings, numbers, booleans, byte arrays, nested
 * tables, timestamps). The inbox sees headers as strings; this is the one place that
 * converts them. Nothing here throws, whatever the table holds: a throw while mapping a
 * delivery would bring it back forever. @internal
 */
export function headersToStrings(headers: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (typeof headers !== 'object' || headers === null) return out;
  for (const [name, value] of Object.entries(headers as Record<string, unknown>)) {
    const text = valueToString(value);
    if (text !== undefined) defineOwn(out, name, text);
  }
  return out;
}

/** `target[name] = value` as an own property: assigning to `__proto__` would drop it. */
function defineOwn(target: object, name: string, value: unknown): void {
  Object.defineProperty(target, name, {
    value,
    enumerable: true,
    writable: true,
    configurable: true,
  });
}

/**
 * Whether `value` is a real Buffer. `Buffer.isBuffer` alone is an `instanceof` check, also
 * true for a table whose prototype a `__proto__` field set to a Buffer: reading such a
 * table's bytes throws a TypeError.
 */
function isBytes(value: unknown): value is Buffer {
  return ArrayBuffer.isView(value) && Buffer.isBuffer(value);
}

function valueToString(value: unknown): string | undefined {
  if (value === null || value === undefined) return undefined;
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') {
    return String(value);
  }
  if (isBytes(value)) return value.toString('utf8');
  // toISOString throws a RangeError on an invalid date.
  if (value instanceof Date) {
    return Number.isNaN(value.getTime()) ? String(value) : value.toISOString();
  }
  try {
    return JSON.stringify(plain(value, new Set()));
  } catch {
    return undefined;
  }
}

/**
 * `value` as plain data for `JSON.stringify`, read from own properties only: a table whose
 * `__proto__` field made it inherit from a Buffer would throw in `toJSON`. Byte arrays keep
 * their `toJSON` form, bigints become strings, a repeated (circular) object is left out.
 */
function plain(value: unknown, seen: Set<object>): unknown {
  if (typeof value === 'bigint') return value.toString();
  if (typeof value !== 'object' || value === null) return value;
  if (isBytes(value)) return value.toJSON();
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? null : value.toISOString();
  if (seen.has(value)) return undefined;
  seen.add(value);
  let out: unknown;
  if (Array.isArray(value)) {
    out = value.map((item: unknown) => plain(item, seen));
  } else {
    const copy: Record<string, unknown> = {};
    for (const key of Object.keys(value)) {
      defineOwn(copy, key, plain((value as Record<string, unknown>)[key], seen));
    }
    out = copy;
  }
  seen.delete(value);
  return out;
}

/** The table's own value for `name`: never one `Object.prototype` (or a `__proto__`) holds. */
function ownValue(headers: unknown, name: string): unknown {
  if (typeof headers !== 'object' || headers === null) return undefined;
  return Object.hasOwn(headers, name) ? (headers as Record<string, unknown>)[name] : undefined;
}

/** Reads a header as a non-empty string, or `undefined`. @internal */
export function headerString(headers: unknown, name: string): string | undefined {
  const value = valueToString(ownValue(headers, name));
  return value === undefined || value === '' ? undefined : value;
}

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

/** Whether `bytes` decode as UTF-8 without replacing anything. */
function isUtf8(bytes: Uint8Array): boolean {
  try {
    strictUtf8.decode(bytes);
    return true;
  } catch {
    return false;
  }
}

/**
 * Reads a header that names something (a message id, a scope) like {@link headerString},
 * except that a byte array that is not valid UTF-8 comes back as the bytes: decoded, each
 * bad byte would become U+FFFD, so different ids (or tenants) would read as one. @internal
 */
export function headerKey(headers: unknown, name: string): string | Buffer | undefined {
  const value = ownValue(headers, name);
  if (isBytes(value) && value.length > 0 && !isUtf8(value)) return value;
  return headerString(headers, name);
}

/** Reads a header as a non-negative safe integer, or `undefined`. @internal */
export function headerCount(headers: unknown, name: string): number | undefined {
  const raw = ownValue(headers, name);
  const value =
    typeof raw === 'string'
      ? /^[0-9]+$/.test(raw)
        ? Number(raw)
        : undefined
      : typeof raw === 'bigint'
        ? Number(raw)
        : raw;
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? value : undefined;
}

/**
 * A copy of a received header table that amqplib can encode again, for a copy of the
 * message the consumer publishes (to a retry queue or the dead-letter exchange). Not every
 * decoded table can be: a NaN, -Infinity or below -2^63 double is written as an int64 and
 * refused; a nested table with a `!` or `hasOwnProperty` field is taken for a typed value or
 * breaks the check for one; a `__proto__` field set to bytes makes a table look like a
 * Buffer. Such values are rewritten (an explicit double, a table as its JSON text, a plain
 * copy of the table) so the publish does not fail on every delivery of the message. @internal
 */
export function encodableHeaders(headers: unknown): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (typeof headers !== 'object' || headers === null) return out;
  copyFields(headers, out, new Set());
  return out;
}

/**
 * Copies the own fields of `table` into `out`. Inherited ones (a decoded table inherits
 * whatever its `__proto__` field held) are left out: reading them can throw.
 */
function copyFields(table: object, out: Record<string, unknown>, seen: Set<object>): void {
  for (const name of Object.keys(table)) {
    const copy = encodable((table as Record<string, unknown>)[name], seen);
    if (copy !== undefined) defineOwn(out, name, copy);
  }
}

const INT64_MIN = -(2 ** 63);
const UINT32_MAX = 2 ** 32 - 1;
const UINT64_MAX = 2 ** 64 - 1;

/** `value` as amqplib encodes it without throwing; `undefined` leaves it out. */
function encodable(value: unknown, seen: Set<object>): unknown {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return value;
    case 'number':
      // amqplib takes any number of magnitude 2^50 or more for an integer and then fails to
      // write a fractional one as int64; doubles are named explicitly.
      return Number.isInteger(value) && value >= INT64_MIN ? value : { '!': 'double', value };
    case 'bigint':
      return value.toString();
    case 'object':
      return value === null ? null : encodableObject(value, seen);
    default:
      return undefined;
  }
}

function encodableObject(value: object, seen: Set<object>): unknown {
  if (isBytes(value)) return value;
  const typed = typedValue(value);
  if (typed !== undefined) return typed;
  if (seen.has(value)) return undefined;
  seen.add(value);
  let out: unknown;
  if (Array.isArray(value)) {
    // An array cannot hold a gap: what cannot be encoded becomes void.
    out = value.map((item: unknown) => encodable(item, seen) ?? null);
  } else if (Object.hasOwn(value, '!') || Object.hasOwn(value, 'hasOwnProperty')) {
    out = valueToString(value);
  } else {
    const table: Record<string, unknown> = {};
    copyFields(value, table, seen);
    out = table;
  }
  seen.delete(value);
  return out;
}

/**
 * A timestamp or decimal as amqplib decodes one (`{ '!': type, value }`), fit to encode, as
 * a fresh plain object (amqplib calls `hasOwnProperty` on it); else `undefined`.
 */
function typedValue(value: object): object | undefined {
  if (!Object.hasOwn(value, '!') || Object.keys(value).length !== 2) return undefined;
  const { '!': type, value: inner } = value as { '!'?: unknown; value?: unknown };
  if (type === 'timestamp') {
    const ok = typeof inner === 'number' && Number.isInteger(inner) && inner >= 0;
    return ok && inner <= UINT64_MAX ? { '!': 'timestamp', value: inner } : undefined;
  }
  if (type !== 'decimal' || typeof inner !== 'object' || inner === null) return undefined;
  const { places, digits } = inner as { places?: unknown; digits?: unknown };
  const ok =
    typeof places === 'number' &&
    Number.isInteger(places) &&
    places >= 0 &&
    places < 256 &&
    typeof digits === 'number' &&
    Number.isInteger(digits) &&
    digits >= 0 &&
    digits <= UINT32_MAX;
  return ok ? { '!': 'decimal', value: { places, digits } } : undefined;
}
