import Table from 'cli-table3';

/** A plain table for a terminal (no colour, so it reads the same when piped). */
export function table(
  head: readonly string[],
  rows: readonly (readonly (string | number)[])[],
): string {
  const t = new Table({ head: [...head], style: { head: [], border: [] } });
  for (const row of rows) t.push(row.map(String));
  return t.toString();
}

/** `3s`, `4m 10s`, `2h 5m`, `3d 4h`. */
export function age(seconds: number | null): string {
  if (seconds === null) return '-';
  const s = Math.max(0, Math.floor(seconds));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${s % 60}s`;
  if (s < 86_400) return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`;
  return `${Math.floor(s / 86_400)}d ${Math.floor((s % 86_400) / 3600)}h`;
}

/** Writes `value` as indented JSON (Uint8Array as hex) with a final newline. */
export function printJson(value: unknown): void {
  process.stdout.write(
    `${JSON.stringify(value, (_k, v: unknown) => (v instanceof Uint8Array ? Buffer.from(v).toString('hex') : v), 2)}\n`,
  );
}
