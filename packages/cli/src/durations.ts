import { UsageError } from './usage-error';

const UNIT_MS: Readonly<Record<string, number>> = {
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
  w: 604_800_000,
};

/** Upper bound of a duration: 10 years, far past any retention window. */
const MAX_MS = 10 * 365 * 86_400_000;

/**
 * A duration such as `7d`, `24h`, `30m`, `90s`, `500ms` or `1h30m`, in milliseconds. A tiny
 * parser of our own: no duration library is a dependency, and the format needs no more.
 * Throws {@link UsageError} naming `flag` for anything else, zero, or more than 10 years.
 */
export function parseDuration(value: string, flag: string): number {
  const text = value.trim().toLowerCase();
  const part = /([0-9]+(?:\.[0-9]+)?)(ms|s|m|h|d|w)/gy;
  let total = 0;
  let end = 0;
  for (let match = part.exec(text); match !== null; match = part.exec(text)) {
    total += Number(match[1]) * UNIT_MS[match[2]!]!;
    end = part.lastIndex;
  }
  if (text === '' || end !== text.length || !(total >= 1) || total > MAX_MS) {
    throw new UsageError(
      `${flag} must be a duration such as 7d, 24h, 30m or 1h30m (up to 10 years), got ${JSON.stringify(value)}`,
    );
  }
  return Math.round(total);
}

/** `7d`, `1d 12h`, `30m`: the inverse of {@link parseDuration} for messages. */
export function formatDuration(ms: number): string {
  const parts: string[] = [];
  let rest = ms;
  for (const [unit, size] of [
    ['d', 86_400_000],
    ['h', 3_600_000],
    ['m', 60_000],
    ['s', 1000],
  ] as const) {
    if (rest >= size) {
      parts.push(`${Math.floor(rest / size)}${unit}`);
      rest %= size;
    }
  }
  if (rest > 0 || parts.length === 0) parts.push(`${rest}ms`);
  return parts.join(' ');
}
