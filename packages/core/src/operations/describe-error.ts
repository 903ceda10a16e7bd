import { errorText } from '../common/errors';
import { textOf } from '../common/text';
import type { StoredOperationError } from './types';

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
    const name = typeof raw.name === 'string' ? errorText(raw.name, MAX_STORED_NAME) : 'Error';
    const message = errorText(typeof raw.message === 'string' ? raw.message : textOf(error));
    return typeof raw.code === 'string'
      ? { name, message, code: errorText(raw.code, MAX_STORED_NAME) }
      : { name, message };
  }
  return { name: 'Error', message: errorText(textOf(error)) };
}
