const MARKER = Symbol.for('@justonce/core/error');

/** Options shared by every justonce error. */
export interface JustonceErrorOptions {
  /** Whether trying the same thing again may succeed. */
  retriable?: boolean;
  /** The underlying error, if any. */
  cause?: unknown;
  /** Structured context for logs and dead letters (never payloads). */
  details?: Readonly<Record<string, unknown>>;
}

/**
 * Base class of every error justonce throws or reports.
 *
 * Test with {@link isJustonceError} rather than `instanceof`: the guard checks a
 * marker, so it also works when two copies of the package are installed.
 */
export class JustonceError extends Error {
  /** @internal */
  readonly [MARKER] = true;
  /** Stable, machine-readable error code, e.g. `INVALID_CONFIG`. */
  readonly code: string;
  /** Whether trying the same thing again may succeed. */
  readonly retriable: boolean;
  /** Structured context (never payloads). */
  readonly details: Readonly<Record<string, unknown>>;

  constructor(code: string, message: string, options: JustonceErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.retriable = options.retriable ?? false;
    this.details = options.details ?? {};
  }
}

/** True when `value` is a {@link JustonceError} from any copy of this package. */
export function isJustonceError(value: unknown): value is JustonceError {
  return (
    typeof value === 'object' &&
    value !== null &&
    (value as Record<symbol, unknown>)[MARKER] === true
  );
}

/** True when `value` is a {@link JustonceError} with the given code. */
export function hasErrorCode(value: unknown, code: string): value is JustonceError {
  return isJustonceError(value) && value.code === code;
}
