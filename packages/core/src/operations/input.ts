import { unstorableText } from '../store/text';
import { InvalidOperationInputError } from './errors/invalid-operation-input-error';
import type { OperationRef, RunOptions } from './types';

/**
 * @internal The per-call options of `run` or `reserve` as plain JavaScript may pass them:
 * omitted, `null` (taken as omitted) or an object, with a `signal` that is an AbortSignal.
 * Refused with {@link InvalidOperationInputError}, never a TypeError later on.
 */
export function callOptions<T extends RunOptions>(value: unknown, method: string): Partial<T> {
  if (value === undefined || value === null) return {};
  if (typeof value !== 'object') {
    throw new InvalidOperationInputError(`the options of ${method} must be an object`, {
      given: typeof value,
    });
  }
  const signal = (value as { signal?: unknown }).signal;
  if (signal !== undefined && !isAbortSignal(signal)) {
    throw new InvalidOperationInputError(`the signal given to ${method} must be an AbortSignal`, {
      given: signal === null ? 'null' : typeof signal,
    });
  }
  return value as Partial<T>;
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
