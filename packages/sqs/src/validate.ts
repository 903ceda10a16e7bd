import { ConfigurationError } from '@justonce/core';

/** An integer option in `[min, max]`, or `fallback` when unset; else a ConfigurationError. */
export function integerOption(
  value: unknown,
  fallback: number,
  name: string,
  min: number,
  max: number,
): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new ConfigurationError(`${name} must be an integer from ${min} to ${max}`, {
      [name]: value,
    });
  }
  return value;
}
