/**
 * The error and the errors it wraps, outermost first: `cause`, the `originalError` some
 * clients use (kafkajs), and the `errors` of an aggregate. Bounded and safe against cycles,
 * so every classifier in justonce (store outages, lost connections, a transport's broker
 * errors) walks a chain the same way. @internal
 */
export function* errorChain(
  error: unknown,
  limit = 32,
): Generator<Readonly<Record<string, unknown>>> {
  const queue: unknown[] = [error];
  const seen = new Set<unknown>();
  while (queue.length > 0 && seen.size < limit) {
    const current = queue.shift();
    if (typeof current !== 'object' || current === null || seen.has(current)) continue;
    seen.add(current);
    const e = current as Readonly<Record<string, unknown>>;
    yield e;
    queue.push(e.cause, e.originalError);
    if (Array.isArray(e.errors)) queue.push(...(e.errors as unknown[]));
  }
}
