import { InvalidOperationInputError } from './errors/invalid-operation-input-error';
import { callOptions } from './input';
import { requestHash } from './request-hash';
import type { OperationsRuntime } from './runtime';
import type { RecordKey } from './sql/row';
import { target } from './target';
import type { RunOptions } from './types';
import { durationInput } from './validate';

/** A call of `run` or `runInTransaction`, its arguments validated. @internal */
export interface PreparedCall<O extends RunOptions> {
  /** The options as given (validated), for what is particular to the method. */
  readonly options: Partial<O>;
  readonly record: RecordKey;
  /** The request's fingerprint. */
  readonly hash: string;
  readonly retentionMs: number;
  readonly waitMs: number;
  readonly signal: AbortSignal | undefined;
}

/**
 * Validates the arguments of `method` (`run` or `runInTransaction`) before any SQL: the
 * effect must be a function, the options those `known` lists, the key, names, request and
 * durations usable. Throws {@link InvalidOperationInputError}. @internal
 */
export function prepareCall<O extends RunOptions>(
  rt: OperationsRuntime,
  method: string,
  known: readonly string[],
  args: { readonly key: unknown; readonly request: unknown; readonly effect: unknown },
  given: unknown,
): PreparedCall<O> {
  if (typeof args.effect !== 'function') {
    throw new InvalidOperationInputError(`${method} needs an effect function`);
  }
  const options = callOptions<O>(given, method, known);
  const record = target(rt, args.key, options);
  const hash = requestHash(args.request);
  const retentionMs = durationInput(
    options.retentionMs,
    'retentionMs',
    rt.options.defaultRetentionMs,
    1,
  );
  const waitMs = durationInput(
    options.waitForInProgressMs,
    'waitForInProgressMs',
    rt.options.defaultWaitMs,
    0,
  );
  return { options, record, hash, retentionMs, waitMs, signal: options.signal };
}
