import { createHash } from 'node:crypto';
import { isJustonceError } from '../errors';
import { errorText } from '../common/errors';
import { InvalidOperationInputError } from './errors/invalid-operation-input-error';

/**
 * JSON text of `value` with object keys sorted at every level, so two requests that differ
 * only in key order serialize alike. Otherwise it follows `JSON.stringify`: `toJSON` is
 * honoured (dates become ISO strings), `undefined`, functions and symbols are dropped from
 * objects and become `null` in arrays, non-finite numbers become `null`. A top-level
 * `undefined` serializes as `null`. BigInts and cycles are refused with
 * {@link InvalidOperationInputError}.
 */
export function canonicalJson(value: unknown): string {
  return write(value, new Set()) ?? 'null';
}

/**
 * SHA-256 (hex) of {@link canonicalJson}: the fingerprint stored as `request_hash`. Any
 * string hashes exactly (JSON escapes U+0000 and lone surrogates), so requests need no text
 * checks. Whatever makes the request unserializable (a `toJSON` or getter that throws, nesting
 * deeper than the stack) is refused with {@link InvalidOperationInputError}.
 */
export function requestHash(request: unknown): string {
  let json: string;
  try {
    json = canonicalJson(request);
  } catch (error) {
    if (isJustonceError(error)) throw error;
    const message = (error as { message?: unknown } | null)?.message;
    throw new InvalidOperationInputError(
      `the request cannot be serialized to JSON: ${typeof message === 'string' ? errorText(message) : 'a non-Error value was thrown'}`,
      {},
      error,
    );
  }
  return createHash('sha256').update(json, 'utf8').digest('hex');
}

function write(input: unknown, ancestors: Set<object>): string | undefined {
  let value = input;
  if (
    value !== null &&
    typeof value === 'object' &&
    typeof (value as { toJSON?: unknown }).toJSON === 'function'
  ) {
    value = (value as { toJSON(): unknown }).toJSON();
  }
  switch (typeof value) {
    case 'string':
      return JSON.stringify(value);
    case 'number':
      return Number.isFinite(value) ? JSON.stringify(value) : 'null';
    case 'boolean':
      return value ? 'true' : 'false';
    case 'bigint':
      throw new InvalidOperationInputError('a request cannot contain a BigInt; convert it first', {
        type: 'bigint',
      });
    case 'undefined':
    case 'function':
    case 'symbol':
      return undefined;
    default:
      break;
  }
  if (value === null) return 'null';
  const object = value as object;
  if (ancestors.has(object)) {
    throw new InvalidOperationInputError('a request cannot contain a cycle');
  }
  ancestors.add(object);
  try {
    if (Array.isArray(object)) {
      return `[${object.map((item) => write(item, ancestors) ?? 'null').join(',')}]`;
    }
    const record = object as Record<string, unknown>;
    const parts: string[] = [];
    for (const name of Object.keys(record).sort()) {
      const text = write(record[name], ancestors);
      if (text !== undefined) parts.push(`${JSON.stringify(name)}:${text}`);
    }
    return `{${parts.join(',')}}`;
  } finally {
    ancestors.delete(object);
  }
}
