/** Identifies one message of a consumer. @internal */
export interface MessageKey {
  readonly scope: string;
  readonly messageId: string;
}

/** A map key for a {@link MessageKey}; NUL cannot occur in PostgreSQL text. @internal */
export function keyOf(key: MessageKey): string {
  return `${key.scope}\u0000${key.messageId}`;
}

/**
 * Scopes and ids as two array bindings, for `unnest(?::text[], ?::text[])`. Arrays keep a
 * statement at a fixed number of bindings however many messages it covers (PGlite fails on
 * statements with thousands of them). @internal
 */
export function keyArrays(keys: readonly MessageKey[]): [string[], string[]] {
  return [keys.map((k) => k.scope), keys.map((k) => k.messageId)];
}
