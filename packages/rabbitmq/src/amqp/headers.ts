/**
 * AMQP header tables carry typed values (strings, numbers, booleans, byte arrays, nested
 * tables, timestamps). The inbox sees headers as strings; this is the one place that
 * converts them. @internal
 */
export function headersToStrings(headers: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (typeof headers !== 'object' || headers === null) return out;
  for (const [name, value] of Object.entries(headers as Record<string, unknown>)) {
    const text = valueToString(value);
    if (text !== undefined) out[name] = text;
  }
  return out;
}

function valueToString(value: unknown): string | undefined {
  if (value === null || value === undefined) return undefined;
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') {
    return String(value);
  }
  if (Buffer.isBuffer(value)) return value.toString('utf8');
  if (value instanceof Date) return value.toISOString();
  try {
    return JSON.stringify(value, (_key, v: unknown) =>
      typeof v === 'bigint' ? v.toString() : Buffer.isBuffer(v) ? v.toString('utf8') : v,
    );
  } catch {
    return undefined;
  }
}

/** Reads a header as a non-empty string, or `undefined`. @internal */
export function headerString(headers: unknown, name: string): string | undefined {
  if (typeof headers !== 'object' || headers === null) return undefined;
  const value = valueToString((headers as Record<string, unknown>)[name]);
  return value === undefined || value === '' ? undefined : value;
}

/** Reads a header as a finite non-negative integer, or `undefined`. @internal */
export function headerCount(headers: unknown, name: string): number | undefined {
  if (typeof headers !== 'object' || headers === null) return undefined;
  const raw = (headers as Record<string, unknown>)[name];
  const value = typeof raw === 'string' ? Number(raw) : typeof raw === 'bigint' ? Number(raw) : raw;
  return typeof value === 'number' && Number.isInteger(value) && value >= 0 ? value : undefined;
}
