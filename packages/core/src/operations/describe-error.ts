import { storableDiagnostic } from '../store/text';
import type { StoredOperationError } from './types';

/** Longest error message kept in a record. */
const MAX_STORED_MESSAGE = 1000;
/** Longest error name or code kept in a record. */
const MAX_STORED_NAME = 200;

/**
 * The stored form of an error: name, message (cut short) and code, whatever was thrown, in
 * text the `error` column accepts (a message with U+0000 must not fail the write that
 * records the failure). @internal
 */
export function describeError(error: unknown): StoredOperationError {
  if (error !== null && typeof error === 'object') {
    const raw = error as { name?: unknown; message?: unknown; code?: unknown };
    const name = typeof raw.name === 'string' ? storedText(raw.name, MAX_STORED_NAME) : 'Error';
    const message = storedText(typeof raw.message === 'string' ? raw.message : safeString(error));
    return typeof raw.code === 'string'
      ? { name, message, code: storedText(raw.code, MAX_STORED_NAME) }
      : { name, message };
  }
  return { name: 'Error', message: storedText(safeString(error)) };
}

/**
 * Diagnostic text as the `error` column (jsonb) can hold it: at most `max` characters, not
 * ending in half a surrogate pair, U+0000 and lone surrogates made storable.
 */
function storedText(text: string, max = MAX_STORED_MESSAGE): string {
  let cut = text.length > max ? text.slice(0, max) : text;
  const last = cut.charCodeAt(cut.length - 1);
  if (cut.length < text.length && last >= 0xd800 && last <= 0xdbff) cut = cut.slice(0, -1);
  return storableDiagnostic(cut);
}

/** `String(value)`, or a placeholder when that throws (a null-prototype object, a Proxy). */
function safeString(value: unknown): string {
  try {
    return String(value);
  } catch {
    return `[unprintable ${typeof value}]`;
  }
}
