import Table from 'cli-table3';
import { bytesFigure, visibleText } from '@justonce/core/admin';

/**
 * Prints a line of human output with every control character written as its `\u` escape, so
 * a stored text (a consumer name, an error, a message id) cannot drive the terminal or hide
 * itself. JSON output needs none of this: JSON escapes them itself.
 */
export function say(text: string): void {
  console.log(visibleText(text));
}

/** {@link say} on standard error. */
export function complain(text: string): void {
  console.error(visibleText(text));
}

/** A plain table for a terminal (no colour, so it reads the same when piped). */
export function table(
  head: readonly string[],
  rows: readonly (readonly (string | number)[])[],
): string {
  const t = new Table({ head: [...head], style: { head: [], border: [], compact: true } });
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

/** A size in bytes (`37.2 MiB`), or `-` for an unknown one. */
export function bytes(count: number | null): string {
  return count === null ? '-' : bytesFigure(count);
}

function bytesAsHex(_key: string, value: unknown): unknown {
  return value instanceof Uint8Array ? Buffer.from(value).toString('hex') : value;
}

/** Writes `value` as indented JSON (Uint8Array as hex) with a final newline. */
export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, bytesAsHex, 2)}\n`);
}

/** Writes `value` as JSON on one line (for `--watch --json`: one line per refresh). */
export function printJsonLine(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, bytesAsHex)}\n`);
}

/** A date or `-`. */
export function time(date: Date | null | undefined): string {
  return date ? date.toISOString() : '-';
}

/** Pretty JSON when the body parses as JSON, the text when it is valid UTF-8 text, hex otherwise. */
export function renderBody(body: Uint8Array | string): string {
  const text = typeof body === 'string' ? body : decodeUtf8(body);
  if (text !== undefined) {
    try {
      return JSON.stringify(JSON.parse(text), null, 2);
    } catch {
      if (typeof body === 'string' || isPrintable(text)) return text;
    }
  }
  const hex = Buffer.from(body as Uint8Array).toString('hex');
  return (hex.match(/.{1,64}/g) ?? ['']).join('\n');
}

/** `text (12 bytes)` or `bytes (3)`: what {@link renderBody} shows. */
export function bodyLabel(body: Uint8Array | string): string {
  return typeof body === 'string' ? 'text' : `${body.byteLength} bytes`;
}

function decodeUtf8(bytes: Uint8Array): string | undefined {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return undefined;
  }
}

/** No control characters but tab and newlines: safe to print on a terminal as it is. */
function isPrintable(text: string): boolean {
  // eslint-disable-next-line no-control-regex
  return !/[\u0000-\u0008\u000b-\u001f\u007f]/.test(text);
}

/** `{ "a": 1 }` when it is JSON, else its string form; for stored responses and errors. */
export function renderValue(value: unknown): string {
  if (value === null || value === undefined) return '-';
  return typeof value === 'string' ? value : JSON.stringify(value, null, 2);
}
