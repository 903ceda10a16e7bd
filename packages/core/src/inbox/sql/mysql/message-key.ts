import type { MessageKey } from '../message-key';

/**
 * Scopes and ids as a list of `(?, ?)` pairs, for `(scope, message_id) in (…)`: MySQL has no
 * arrays to `unnest`, and its driver binds any number of values. The text varies with the
 * number of keys, so these statements are never prepared (MySQL's are not anyway). @internal
 */
export function keyPairs(keys: readonly MessageKey[]): { sql: string; bindings: string[] } {
  const bindings: string[] = [];
  for (const key of keys) bindings.push(key.scope, key.messageId);
  return { sql: keys.map(() => '(?, ?)').join(', '), bindings };
}

/** A MySQL boolean (0 or 1, or `'0'`/`'1'` from an expression) as a boolean. @internal */
export function mysqlBoolean(value: unknown): boolean {
  return value === true || Number(value) === 1;
}

/** A JSON column's value: MariaDB keeps JSON as text and returns the text. @internal */
export function mysqlJson<T>(value: T | string | null): T | null {
  return typeof value === 'string' ? (JSON.parse(value) as T) : value;
}

/** True for MySQL's duplicate-key error (ER_DUP_ENTRY, errno 1062). @internal */
export function isDuplicateKey(error: unknown): boolean {
  const { code, errno } = (error ?? {}) as { code?: unknown; errno?: unknown };
  return code === 'ER_DUP_ENTRY' || errno === 1062;
}
