import { ConfigurationError } from '../errors/configuration-error';
import { storableDiagnostic, unstorableText, unwritableText } from '../common/text';

/**
 * Argument checks of the operator's calls (admin, dead letters): every bad argument is a {@link ConfigurationError} naming
 * it, before any SQL, so the CLI and the dashboard can show it as it is. @internal
 */

/** A row id as the outbox and dead-letter tables store it: a positive bigint, as decimal text. */
const ROW_ID = /^[1-9][0-9]{0,18}$/;
/** The largest bigint: a longer or larger decimal cannot name a row. */
const MAX_BIGINT = 9_223_372_036_854_775_807n;

/** Whether `value` is a row id (a decimal string of a positive bigint). @internal */
export function isRowId(value: unknown): value is string {
  return typeof value === 'string' && ROW_ID.test(value) && BigInt(value) <= MAX_BIGINT;
}

/** `value` as a row id, or a {@link ConfigurationError} naming `name`. @internal */
export function rowId(value: unknown, name = 'id'): string {
  if (!isRowId(value)) {
    throw new ConfigurationError(`${name} must be a row id (a positive decimal integer string)`, {
      [name]: value,
    });
  }
  return value;
}

/** A page size from 1 to 1000, default 100. @internal */
export function limitOption(value: unknown): number {
  if (value === undefined) return 100;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > 1000) {
    throw new ConfigurationError('limit must be an integer from 1 to 1000', { limit: value });
  }
  return value;
}

/** An optional valid `Date`. @internal */
export function dateOption(value: unknown, name: string): Date | undefined {
  if (value === undefined) return undefined;
  if (!(value instanceof Date) || Number.isNaN(value.getTime())) {
    throw new ConfigurationError(`${name} must be a valid Date`, { [name]: String(value) });
  }
  return value;
}

/**
 * An optional non-empty string that PostgreSQL can take as a binding (no U+0000, no lone
 * surrogate: either would fail the statement with a driver error, or match something else).
 * @internal
 */
export function stringOption(value: unknown, name: string): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value.length === 0) {
    throw new ConfigurationError(`${name} must be a non-empty string`, { [name]: value });
  }
  return textOption(value, name);
}

/** `value` unless it holds text PostgreSQL cannot take (see {@link stringOption}). @internal */
export function textOption(value: string, name: string): string {
  const why = unwritableText(value);
  if (why !== undefined) throw new ConfigurationError(`${name} ${why}`, { [name]: value });
  return value;
}

/**
 * `value` unless PostgreSQL cannot store it exactly (see `unstorableText`: U+0000, a lone
 * surrogate, a leading U+FEFF): for a name given at construction that the store keeps as a
 * key, where every call would otherwise fail in SQL or be refused. @internal
 */
export function storableNameOption(value: string, name: string): string {
  const why = unstorableText(value);
  if (why !== undefined) {
    throw new ConfigurationError(`${name} ${why}`, {
      [name]: storableDiagnostic(value.slice(0, 50)),
    });
  }
  return value;
}

/** An optional value among `allowed`; `fallback` when absent. @internal */
export function choiceOption<T extends string>(
  value: unknown,
  name: string,
  allowed: readonly T[],
  fallback: T,
): T {
  if (value === undefined) return fallback;
  if (typeof value !== 'string' || !(allowed as readonly string[]).includes(value)) {
    throw new ConfigurationError(`${name} must be one of ${allowed.join(', ')}`, { [name]: value });
  }
  return value as T;
}
