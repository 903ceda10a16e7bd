import { createHash } from 'node:crypto';
import { nameInput } from '../validate';
import type { RecordKey } from '../sql/row';

/** Longest step name of `ctx.once`, in characters (`once:<step>` names its records). */
export const MAX_STEP_LENGTH = 100;

/** Version tag hashed into every key, so a future format can never reuse an old key. */
const KEY_VERSION = 'justonce.once/1';

/**
 * Whose steps a `ctx.once` records: an inbox's message (`inbox`, the consumer, the message's
 * scope and id) or an operation's record (`operation`, its name, scope and key; an HTTP
 * route's request is one).
 */
export interface OnceParent {
  /** `inbox` for a consumer's message, `operation` for an operation's record. */
  readonly kind: 'inbox' | 'operation';
  /** The consumer name, or the operation name. */
  readonly namespace: string;
  readonly scope: string;
  /** The message id, or the operation's key. */
  readonly id: string;
}

/**
 * A step name as given: a string of 1 to {@link MAX_STEP_LENGTH} characters that the store
 * keeps exactly; else {@link InvalidOperationInputError}, before any SQL. @internal
 */
export function stepInput(step: unknown): string {
  return nameInput(step, 'step', MAX_STEP_LENGTH);
}

/**
 * The idempotency key `ctx.once` gives the effect of `step` under `parent`: `once_` and the
 * SHA-256 (lowercase hex) of the JSON array `["justonce.once/1", kind, namespace, scope, id,
 * step]`. Deterministic, the same in every process and on every dialect, 69 ASCII characters
 * whatever the inputs' length; the JSON array keeps the parts apart. For operators matching a
 * record with a remote API's own records.
 */
export function onceKey(parent: OnceParent, step: string): string {
  const text = JSON.stringify([
    KEY_VERSION,
    parent.kind,
    parent.namespace,
    parent.scope,
    parent.id,
    step,
  ]);
  return `once_${createHash('sha256').update(text, 'utf8').digest('hex')}`;
}

/**
 * Where the step's record lives in the `idempotency` table: the parent's scope, the
 * operation `once:<step>` (what the operations admin lists and the metrics count it under),
 * the idempotency key as the key. @internal
 */
export function onceRecord(parent: OnceParent, step: string): RecordKey {
  return { scope: parent.scope, operation: `once:${step}`, key: onceKey(parent, step) };
}
