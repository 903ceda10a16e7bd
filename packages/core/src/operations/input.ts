import { optionKeys, unknownOptionsMessage } from '../config/options';
import { storableDiagnostic, unstorableText } from '../common/text';
import { InvalidOperationInputError } from './errors/invalid-operation-input-error';
import type {
  OperationRef,
  OperationTarget,
  ReserveOptions,
  RunOptions,
  TransactionalRunOptions,
} from './types';

/** @internal The per-call options `run` takes. */
export const RUN_KEYS = optionKeys<RunOptions>()([
  'scope',
  'operation',
  'retentionMs',
  'waitForInProgressMs',
  'signal',
]);

/** @internal The per-call options `reserve` takes. */
export const RESERVE_KEYS = optionKeys<ReserveOptions>()(['scope', 'operation', 'retentionMs']);

/** @internal The per-call options `get` takes. */
export const GET_KEYS = optionKeys<OperationTarget>()(['scope', 'operation']);

/** @internal The per-call options `runInTransaction` takes: those of `run`, and `onStep`. */
export const TRANSACTIONAL_RUN_KEYS = optionKeys<TransactionalRunOptions>()([
  'scope',
  'operation',
  'retentionMs',
  'waitForInProgressMs',
  'signal',
  'onStep',
]);

/**
 * @internal The per-call options of `run` or `reserve` as plain JavaScript may pass them:
 * omitted, `null` (taken as omitted) or an object, with a `signal` that is an AbortSignal
 * and, when `known` is given, no key outside it (a misspelt option would otherwise be
 * ignored in silence). Refused with {@link InvalidOperationInputError}, never a TypeError
 * later on.
 */
export function callOptions<T extends RunOptions>(
  value: unknown,
  method: string,
  known?: readonly string[],
): Partial<T> {
  if (value === undefined || value === null) return {};
  if (typeof value !== 'object') {
    throw new InvalidOperationInputError(`the options of ${method} must be an object`, {
      given: typeof value,
    });
  }
  if (known !== undefined) rejectUnknownCallOptions(value, known, method);
  const signal = (value as { signal?: unknown }).signal;
  if (signal !== undefined && !isAbortSignal(signal)) {
    throw new InvalidOperationInputError(`the signal given to ${method} must be an AbortSignal`, {
      given: signal === null ? 'null' : typeof signal,
    });
  }
  return value as Partial<T>;
}

/**
 * Refuses a per-call option `method` does not take, naming it and the closest known one:
 * "runInTransaction: unknown option `onstep`; did you mean `onStep`?".
 */
function rejectUnknownCallOptions(value: object, known: readonly string[], method: string): void {
  const unknown = Object.keys(value)
    .filter((key) => !known.includes(key))
    .map((key) => storableDiagnostic(key.slice(0, 50)));
  if (unknown.length === 0) return;
  const { message } = unknownOptionsMessage(unknown, known);
  throw new InvalidOperationInputError(`${method}: ${message}`, { unknown });
}

/** An AbortSignal of any realm or polyfill: what `run` uses of one. */
function isAbortSignal(value: unknown): value is AbortSignal {
  if (typeof value !== 'object' || value === null) return false;
  const signal = value as { aborted?: unknown; addEventListener?: unknown };
  return typeof signal.aborted === 'boolean' && typeof signal.addEventListener === 'function';
}

/**
 * @internal A ref handed back to `complete`, `fail` or `extendLease`: it must look like the
 * one `reserve` returned, since its fields go into the compare-and-set. A forged but
 * well-formed ref matches nothing and gets `LeaseLostError`.
 */
export function refInput(value: unknown, method: string): OperationRef {
  if (typeof value !== 'object' || value === null) {
    throw new InvalidOperationInputError(`${method} needs the ref of an acquired reservation`, {
      given: value === null ? 'null' : typeof value,
    });
  }
  const ref = value as Record<string, unknown>;
  for (const name of ['scope', 'operation', 'key', 'ownerId'] as const) {
    const text = ref[name];
    if (typeof text !== 'string' || text === '' || unstorableText(text) !== undefined) {
      throw new InvalidOperationInputError(
        `${method} needs the ref of an acquired reservation: ref.${name} is not a name reserve gives`,
        { field: name },
      );
    }
  }
  const { retentionMs } = ref;
  if (typeof retentionMs !== 'number' || !Number.isFinite(retentionMs) || retentionMs < 1) {
    throw new InvalidOperationInputError(
      `${method} needs the ref of an acquired reservation: ref.retentionMs is not a duration`,
      { field: 'retentionMs' },
    );
  }
  return value as OperationRef;
}
