import { ConfigurationError, type Logger, type Operations, type Store } from '@justonce/core';
import {
  createResilienceGate,
  optionKeys,
  rejectUnknownOptions,
  resolveLogger,
  resolveResilience,
  type ResilienceGate,
} from '@justonce/core/transport';
import type { ErrorLogging, FingerprintOptions, IdempotencyOptions } from './options';

/** Every option of {@link IdempotencyOptions}, for the unknown-key check. */
export const IDEMPOTENCY_KEYS = optionKeys<IdempotencyOptions<unknown> & ErrorLogging>()([
  'operations',
  'operation',
  'scope',
  'required',
  'store',
  'fingerprint',
  'storeStatuses',
  'replayHeaders',
  'inProgress',
  'retentionMs',
  'maxKeyLength',
  'resilience',
  'logger',
]);
const FINGERPRINT_KEYS = optionKeys<FingerprintOptions>()(['headers', 'ignoreFields']);
const IN_PROGRESS_KEYS = optionKeys<NonNullable<IdempotencyOptions<unknown>['inProgress']>>()([
  'waitMs',
]);

/** How the fingerprint of a request is made. @internal */
export type FingerprintRule<Req> =
  | {
      readonly kind: 'default';
      readonly headers: readonly string[];
      readonly ignoreFields: ReadonlySet<string>;
    }
  | { readonly kind: 'custom'; readonly fn: (request: Req) => unknown };

/** {@link IdempotencyOptions} validated, with every default applied. @internal */
export interface ResolvedRoute<Req> {
  readonly operations: Operations;
  readonly operation: string;
  readonly scope: ((request: Req) => string | undefined | Promise<string | undefined>) | 'shared';
  readonly required: boolean;
  readonly store: Store | undefined;
  readonly fingerprint: FingerprintRule<Req>;
  readonly storeStatuses: (status: number) => boolean;
  /** `content-type` and the `replayHeaders`, lower case. */
  readonly storedHeaders: ReadonlySet<string>;
  readonly waitMs: number | undefined;
  readonly retentionMs: number | undefined;
  readonly maxKeyLength: number;
  readonly logger: Logger;
  /** The route's breakers and budget, from the `resilience` option. */
  readonly resilience: ResilienceGate<Req> | undefined;
}

const DEFAULT_MAX_KEY_LENGTH = 255;
const MAX_OPERATION_LENGTH = 200;
/** An HTTP field name (RFC 9110 §5.1: a token). */
const FIELD_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/**
 * The default `logger`: errors to `console.error` (the framework printed a thrown error
 * before the adapters answered it themselves), nothing else.
 */
export const consoleErrors: Logger = {
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: (message, fields) => console.error(`@justonce/http: ${message}`, fields ?? {}),
};

/** Default `storeStatuses`: 2xx to 4xx. */
export function storedByDefault(status: number): boolean {
  return status >= 200 && status < 500;
}

/**
 * Validates the options of one route and applies the defaults; throws a
 * {@link ConfigurationError} naming the first bad option, or every unknown one. `context`
 * names the caller in messages (`idempotent`, `idempotency`, `idempotencyPlugin`).
 * @internal
 */
export function resolveRoute<Req>(
  options: Partial<IdempotencyOptions<Req>> & ErrorLogging,
  context: string,
): ResolvedRoute<Req> {
  rejectUnknownOptions(options, IDEMPOTENCY_KEYS, context);
  rejectUnknownOptions(options.fingerprint, FINGERPRINT_KEYS, context, 'fingerprint');
  rejectUnknownOptions(options.inProgress, IN_PROGRESS_KEYS, context, 'inProgress');
  const operations = operationsOption(options.operations, context);
  const operation = operationName(options.operation, context);
  const scope = scopeOption(options.scope, context);
  const required = booleanOption(options.required, 'required', true, context);
  const store = storeOption(options.store, context);
  const storeStatuses = statusesOption(options.storeStatuses, context);
  const replayHeaders = headerNames(options.replayHeaders, 'replayHeaders', context);
  return {
    operations,
    operation,
    scope,
    required,
    store,
    fingerprint: fingerprintRule(options.fingerprint, context),
    storeStatuses,
    storedHeaders: new Set(['content-type', ...replayHeaders]),
    waitMs: durationOption(options.inProgress?.waitMs, 'inProgress.waitMs', 0, context),
    retentionMs: durationOption(options.retentionMs, 'retentionMs', 1, context),
    maxKeyLength: keyLengthOption(options.maxKeyLength, context),
    logger: loggerOption(options.logger, context),
    resilience:
      options.resilience === undefined
        ? undefined
        : createResilienceGate(operation, resolveResilience(options.resilience, context)),
  };
}

/** The `logger` option: {@link consoleErrors} when absent. */
export function loggerOption(value: unknown, context: string): Logger {
  if (value === undefined) return consoleErrors;
  try {
    return resolveLogger(value);
  } catch {
    throw new ConfigurationError(
      `${context}: logger must have debug, info, warn and error methods`,
      {
        logger: value === null ? 'null' : typeof value,
      },
    );
  }
}

function operationsOption(value: unknown, context: string): Operations {
  const runInTransaction = (value as { runInTransaction?: unknown } | null | undefined)
    ?.runInTransaction;
  if (typeof value !== 'object' || value === null || typeof runInTransaction !== 'function') {
    throw new ConfigurationError(`${context} needs operations, from createOperations({ store })`, {
      operations: value === null ? 'null' : typeof value,
    });
  }
  return value as Operations;
}

function operationName(value: unknown, context: string): string {
  if (typeof value !== 'string' || value.length === 0 || value.length > MAX_OPERATION_LENGTH) {
    throw new ConfigurationError(
      `${context}: operation must be a string of 1 to ${MAX_OPERATION_LENGTH} characters`,
      { operation: typeof value === 'string' ? value.slice(0, 50) : typeof value },
    );
  }
  return value;
}

function scopeOption<Req>(value: unknown, context: string): ResolvedRoute<Req>['scope'] {
  if (value === 'shared') return 'shared';
  if (typeof value !== 'function') {
    throw new ConfigurationError(
      `${context}: scope must be a function returning the request's client, or 'shared'`,
      { scope: typeof value === 'string' ? value.slice(0, 50) : typeof value },
    );
  }
  return value as ResolvedRoute<Req>['scope'];
}

function storeOption(value: unknown, context: string): Store | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'object' || value === null || typeof (value as Store).knex !== 'function') {
    throw new ConfigurationError(`${context}: store must be a store from createStore`, {
      store: value === null ? 'null' : typeof value,
    });
  }
  return value as Store;
}

function fingerprintRule<Req>(value: unknown, context: string): FingerprintRule<Req> {
  if (typeof value === 'function')
    return { kind: 'custom', fn: value as (request: Req) => unknown };
  if (
    value !== undefined &&
    (typeof value !== 'object' || value === null || Array.isArray(value))
  ) {
    throw new ConfigurationError(`${context}: fingerprint must be an object or a function`, {
      fingerprint: value === null ? 'null' : typeof value,
    });
  }
  const given = (value ?? {}) as FingerprintOptions;
  return {
    kind: 'default',
    headers: headerNames(given.headers, 'fingerprint.headers', context),
    ignoreFields: new Set(stringList(given.ignoreFields, 'fingerprint.ignoreFields', context)),
  };
}

/** A list of HTTP field names, lower case. */
function headerNames(value: unknown, name: string, context: string): string[] {
  const names = stringList(value, name, context);
  const bad = names.find((item) => !FIELD_NAME.test(item));
  if (bad !== undefined) {
    throw new ConfigurationError(`${context}: ${name} must list HTTP header names`, {
      [name]: bad.slice(0, 50),
    });
  }
  return names.map((item) => item.toLowerCase());
}

function stringList(value: unknown, name: string, context: string): string[] {
  if (value === undefined) return [];
  if (!Array.isArray(value) || !value.every((item) => typeof item === 'string' && item !== '')) {
    throw new ConfigurationError(`${context}: ${name} must be an array of non-empty strings`, {
      [name]: Array.isArray(value) ? 'array' : typeof value,
    });
  }
  return [...(value as string[])];
}

function booleanOption(value: unknown, name: string, fallback: boolean, context: string): boolean {
  if (value === undefined) return fallback;
  if (typeof value !== 'boolean') {
    throw new ConfigurationError(`${context}: ${name} must be a boolean`, {
      [name]: typeof value,
    });
  }
  return value;
}

/** A duration in milliseconds of at least `min`; `undefined` leaves the operations' default. */
function durationOption(
  value: unknown,
  name: string,
  min: number,
  context: string,
): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < min) {
    throw new ConfigurationError(
      `${context}: ${name} must be a finite number of milliseconds, at least ${min}`,
      { [name]: value },
    );
  }
  return value;
}

function statusesOption(value: unknown, context: string): (status: number) => boolean {
  if (value === undefined) return storedByDefault;
  if (typeof value !== 'function') {
    throw new ConfigurationError(`${context}: storeStatuses must be a function`, {
      storeStatuses: typeof value,
    });
  }
  return value as (status: number) => boolean;
}

function keyLengthOption(value: unknown, context: string): number {
  if (value === undefined) return DEFAULT_MAX_KEY_LENGTH;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
    throw new ConfigurationError(`${context}: maxKeyLength must be a positive integer`, {
      maxKeyLength: value,
    });
  }
  return value;
}
