import { UsageError } from './usage-error';

/** A row id as the store prints it: a positive 64-bit integer in decimal. */
export const ROW_ID = /^[1-9][0-9]{0,18}$/;

/**
 * The ISO 8601 forms `Date` reads the same everywhere: a date (`2026-11-26`), or a date and
 * time with optional seconds, fraction and zone (`2026-11-26T06:00Z`, `…T06:00:00.5+01:00`;
 * a space for the `T`, as RFC 3339 allows).
 * `new Date` alone also takes `12` or `Nov 26 2026`, read differently by each runtime.
 */
const ISO_8601 = /^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})?)?$/;

/** An ISO 8601 date or time, checked; `flag` names the option in the message. */
export function parseDate(value: string, flag: string): Date {
  const date = new Date(value);
  if (!ISO_8601.test(value) || Number.isNaN(date.getTime())) {
    throw new UsageError(`${flag} must be an ISO 8601 date or time, got ${JSON.stringify(value)}`);
  }
  return date;
}

/** `--since` and `--until`, checked and in order. */
export function parseTimeRange(options: { readonly since?: string; readonly until?: string }): {
  since?: Date;
  until?: Date;
} {
  const since = options.since === undefined ? undefined : parseDate(options.since, '--since');
  const until = options.until === undefined ? undefined : parseDate(options.until, '--until');
  if (since && until && since > until) throw new UsageError('--since is after --until');
  return { ...(since ? { since } : {}), ...(until ? { until } : {}) };
}

/**
 * Row ids from positional arguments and a comma-separated `--ids`, checked, without
 * duplicates, in the order given; `undefined` when neither gave any. `what` names the rows.
 */
export function parseIds(
  positional: readonly string[],
  flag: string | undefined,
  what: string,
): string[] | undefined {
  if (flag !== undefined && flag.trim() === '') throw new UsageError('--ids needs ids');
  const all = [...positional, ...(flag === undefined ? [] : flag.split(','))].map((s) => s.trim());
  if (all.length === 0) return undefined;
  for (const id of all) {
    if (!ROW_ID.test(id)) {
      throw new UsageError(`${what} ids are positive integers, got ${JSON.stringify(id)}`);
    }
  }
  return [...new Set(all)];
}

/** A whole number from `min` to `max`; `fallback` when the option was not given. */
export function parseInteger(
  value: string | undefined,
  flag: string,
  range: { readonly min: number; readonly max: number; readonly fallback: number },
): number {
  if (value === undefined) return range.fallback;
  const n = Number(value);
  if (
    !/^[0-9]+$/.test(value.trim()) ||
    !Number.isSafeInteger(n) ||
    n < range.min ||
    n > range.max
  ) {
    throw new UsageError(
      `${flag} must be an integer from ${range.min} to ${range.max}, got ${JSON.stringify(value)}`,
    );
  }
  return n;
}

/** One of `choices`, checked. */
export function parseChoice<T extends string>(
  value: string | undefined,
  flag: string,
  choices: readonly T[],
): T | undefined {
  if (value === undefined) return undefined;
  if (!(choices as readonly string[]).includes(value)) {
    throw new UsageError(
      `${flag} must be one of ${choices.join(', ')}; got ${JSON.stringify(value)}`,
    );
  }
  return value as T;
}

/** A non-empty name (consumer, destination, operation, scope). */
export function parseName(value: string | undefined, flag: string): string | undefined {
  if (value === undefined) return undefined;
  if (value.trim() === '') throw new UsageError(`${flag} must not be empty`);
  return value;
}
