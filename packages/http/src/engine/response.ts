/** One header as a name (lower case) and one value; a header sent twice is two pairs. */
export type HeaderPair = readonly [name: string, value: string];

/**
 * A response as the engine handles it, whatever the framework: the handler's response held
 * until the commit, a replay, or a problem.
 */
export interface HeldResponse {
  readonly status: number;
  readonly headers: readonly HeaderPair[];
  readonly body: Uint8Array;
}

/** The response header that marks a replay; absent from first responses. */
export const IDEMPOTENT_REPLAYED_HEADER = 'idempotent-replayed';

/** The request header that carries the key. */
export const IDEMPOTENCY_KEY_HEADER = 'idempotency-key';

/**
 * The header pairs of a Node-style header map (`res.getHeaders()`, `reply.getHeaders()`),
 * names lowercased, arrays split into one pair per value, numbers as text.
 */
export function headerPairs(
  headers: Readonly<Record<string, number | string | readonly string[] | undefined>>,
): HeaderPair[] {
  const pairs: HeaderPair[] = [];
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    const lower = name.toLowerCase();
    if (typeof value === 'string' || typeof value === 'number') pairs.push([lower, `${value}`]);
    else for (const item of value) pairs.push([lower, item]);
  }
  return pairs;
}
