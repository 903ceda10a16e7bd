import { storableNameOption } from '../config/arguments';
import { optionKeys, rejectUnknownOptions } from '../config/options';
import { ConfigurationError } from '../errors';
import { storableDiagnostic, unstorableText } from '../common/text';
import type { OperationsOptions } from './types';
import { InvalidOperationInputError } from './errors/invalid-operation-input-error';

/** @internal Longest scope or operation name accepted. */
export const MAX_NAME_LENGTH = 200;

const OPERATIONS_KEYS = optionKeys<OperationsOptions<unknown>>()([
  'store',
  'operation',
  'scope',
  'leaseMs',
  'waitForInProgressMs',
  'pollIntervalMs',
  'retentionMs',
  'maxResponseBytes',
  'maxKeyLength',
  'isRetriable',
  'logger',
  'meter',
  'transactions',
]);

/** @internal Refuses an option {@link OperationsOptions} does not declare (a misspelling). */
export function rejectUnknownOperationsOptions(options: OperationsOptions<unknown>): void {
  rejectUnknownOptions(options, OPERATIONS_KEYS, 'createOperations');
}

/**
 * @internal A name given at construction: a non-empty string of at most `max` characters that
 * PostgreSQL stores exactly (every call would refuse it otherwise, see {@link nameInput}).
 */
export function nameOption(value: unknown, name: string, max = MAX_NAME_LENGTH): string {
  if (typeof value !== 'string' || value.length === 0 || value.length > max) {
    throw new ConfigurationError(`${name} must be a string of 1 to ${max} characters`, {
      [name]: typeof value === 'string' ? value.slice(0, 50) : typeof value,
    });
  }
  return storableNameOption(value, name);
}

/**
 * @internal A name given per call (key, scope, operation): a string of 1 to `max` characters
 * that PostgreSQL stores and returns exactly, so that two names are never one record.
 * Refused with {@link InvalidOperationInputError}, before any SQL.
 */
export function nameInput(value: unknown, name: string, max: number): string {
  if (typeof value !== 'string' || value.length === 0 || value.length > max) {
    throw new InvalidOperationInputError(`${name} must be a string of 1 to ${max} characters`, {
      [name]: typeof value === 'string' ? storableDiagnostic(value.slice(0, 50)) : typeof value,
      length: typeof value === 'string' ? value.length : undefined,
    });
  }
  const why = unstorableText(value);
  if (why !== undefined) {
    throw new InvalidOperationInputError(`${name} ${why}`, {
      [name]: storableDiagnostic(value.slice(0, 50)),
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
      { [name]: typeof value === 'number' ? value : typeof value },
    );
  }
  return value;
}
