import { ConfigurationError } from '../errors';

/** @internal Throws {@link ConfigurationError} unless `value` is a finite number in range. */
export function requireNumber(
  name: string,
  value: number,
  { min = -Infinity, max = Infinity, integer = false, minExclusive = false } = {},
): number {
  const ok =
    typeof value === 'number' &&
    Number.isFinite(value) &&
    (minExclusive ? value > min : value >= min) &&
    value <= max &&
    (!integer || Number.isInteger(value));
  if (!ok) {
    const kind = integer ? 'an integer' : 'a number';
    const lower = minExclusive ? `> ${min}` : `>= ${min}`;
    const range = max === Infinity ? lower : `${lower} and <= ${max}`;
    throw new ConfigurationError(`${name} must be ${kind} ${range}, got ${String(value)}`, {
      option: name,
      value,
    });
  }
  return value;
}
