import { ConfigurationError } from '../errors';

/**
 * Validators for options given at construction, shared by every factory in core so that
 * one kind of option is checked, and reported, one way. @internal
 */

/**
 * An integer option from `min` to `max`; `fallback` when absent; anything else is a
 * {@link ConfigurationError} naming the option. Exported for transports, so that their
 * options are checked and reported the way core's are.
 */
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

/**
 * An integer option of at least 1 with no upper bound but the safe integers (sizes and
 * lengths); `fallback` when absent; anything else is a {@link ConfigurationError} naming it.
 * @internal
 */
export function positiveIntegerOption(value: unknown, name: string, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
    throw new ConfigurationError(`${name} must be a positive integer`, { [name]: value });
  }
  return value;
}

/** A duration option: a finite number of milliseconds, at least `min`. @internal */
export function durationOption(
  value: unknown,
  name: string,
  fallback: number,
  min: number,
): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < min) {
    throw new ConfigurationError(
      `${name} must be a finite number of milliseconds, at least ${min}`,
      { [name]: value },
    );
  }
  return value;
}

/** An optional function option. @internal */
export function optionalFunction<F>(value: unknown, name: string): F | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'function') {
    throw new ConfigurationError(`${name} must be a function`, { [name]: typeof value });
  }
  return value as F;
}

/** A boolean option; `fallback` when absent. @internal */
export function optionalBoolean(value: unknown, fallback: boolean, name: string): boolean {
  if (value === undefined) return fallback;
  if (typeof value !== 'boolean') {
    throw new ConfigurationError(`${name} must be a boolean`, { [name]: value });
  }
  return value;
}
