import { ConfigurationError } from '../errors';
import { InvalidOperationInputError } from './errors/invalid-operation-input-error';

/** @internal Longest scope or operation name accepted. */
export const MAX_NAME_LENGTH = 200;

/** @internal A name given at construction: a non-empty string of at most `max` characters. */
export function nameOption(value: unknown, name: string, max = MAX_NAME_LENGTH): string {
  if (typeof value !== 'string' || value.length === 0 || value.length > max) {
    throw new ConfigurationError(`${name} must be a string of 1 to ${max} characters`, {
      [name]: typeof value === 'string' ? value.slice(0, 50) : typeof value,
    });
  }
  return value;
}

/** @internal A name given per call; refused with {@link InvalidOperationInputError}. */
export function nameInput(value: unknown, name: string, max: number): string {
  if (typeof value !== 'string' || value.length === 0 || value.length > max) {
    throw new InvalidOperationInputError(`${name} must be a string of 1 to ${max} characters`, {
      [name]: typeof value === 'string' ? value.slice(0, 50) : typeof value,
      length: typeof value === 'string' ? value.length : undefined,
    });
  }
  return value;
}

/** @internal A duration given per call; refused with {@link InvalidOperationInputError}. */
export function durationInput(value: unknown, name: string, fallback: number, min: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < min) {
    throw new InvalidOperationInputError(
      `${name} must be a finite number of milliseconds, at least ${min}`,
      { [name]: value },
    );
  }
  return value;
}
