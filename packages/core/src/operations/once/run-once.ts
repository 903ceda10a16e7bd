import type { StandardSchemaV1 } from '@standard-schema/spec';
import { crashPoint } from '../../common/crash-points';
import { ConfigurationError } from '../../errors/configuration-error';
import { plainIssues } from '../../messages/issues';
import { InvalidOperationInputError } from '../errors/invalid-operation-input-error';
import { OnceResultError } from '../errors/once-result-error';
import { execute } from '../execute';
import { callOptions } from '../input';
import { optionKeys } from '../../config/options';
import type { PreparedCall } from '../prepare-call';
import { requestHash } from '../request-hash';
import { reserveOrReplay } from '../reserve-or-replay';
import type { OperationsRuntime } from '../runtime';
import type { RunOptions } from '../types';
import { onceRecord, stepInput, type OnceParent } from './key';
import type { OnceEffect, OnceOptions } from './types';

const ONCE_KEYS = optionKeys<OnceOptions<unknown>>()(['schema']);

/** What one bound `ctx.once` knows besides its parent. @internal */
export interface OnceSettings {
  /** How long a step's record answers for its key: at least as long as the parent's. */
  readonly retentionMs: number;
  /** The handler's signal: a wait for another owner, and `fn`'s own signal, abort with it. */
  readonly signal: AbortSignal | undefined;
}

/**
 * One `ctx.once(step, fn, options)`: the operations' reserve, lease and compare-and-set
 * finalize on the record {@link onceRecord} names, written on the ledger's pool (never in the
 * handler's transaction, so a rollback of that keeps it). Acquired: run `fn` with the key,
 * record its result (or its failure, as the ledger's `isRetriable` says). Settled: replay.
 * Another live owner: wait up to `waitForInProgressMs`, then `OperationInProgressError`.
 * @internal
 */
export async function runOnce<R, O>(
  rt: OperationsRuntime,
  parent: OnceParent,
  settings: OnceSettings,
  args: { readonly step: unknown; readonly fn: unknown; readonly options: unknown },
): Promise<O> {
  const step = stepInput(args.step);
  if (typeof args.fn !== 'function') {
    throw new InvalidOperationInputError('once needs an effect function', { step });
  }
  const fn = args.fn as OnceEffect<R>;
  const schema = schemaInput<R, O>(
    callOptions<RunOptions & OnceOptions<R, O>>(args.options, 'once', ONCE_KEYS),
    step,
  );
  const record = onceRecord(parent, step);
  const call: PreparedCall<RunOptions> = {
    options: {},
    record,
    // Binds the record to its parent and step: a row some other writer left at this key
    // is a conflict, never replayed as this step's result.
    hash: requestHash({ once: parent, step }),
    retentionMs: settings.retentionMs,
    waitMs: rt.options.defaultWaitMs,
    signal: settings.signal,
  };
  const result = await reserveOrReplay<R>(rt, call, (reservation) =>
    execute<R>(
      rt,
      reservation,
      async (ctx) => {
        const value = await fn(ctx.key, ctx);
        // The documented window: the effect is done and its record not yet written.
        crashPoint('once.after-effect');
        return value;
      },
      settings.signal,
    ),
  );
  return schema === undefined ? (result as unknown as O) : checkResult(schema, result, step);
}

function schemaInput<R, O>(
  options: Partial<OnceOptions<R, O>>,
  step: string,
): StandardSchemaV1<R, O> | undefined {
  const { schema } = options;
  if (schema === undefined) return undefined;
  const standard = (schema as { '~standard'?: { validate?: unknown } } | null)?.['~standard'];
  if (typeof standard?.validate !== 'function') {
    throw new InvalidOperationInputError('the schema of once must be a Standard Schema', { step });
  }
  return schema;
}

/** The schema's output for `value`, or {@link OnceResultError} with its issues. */
async function checkResult<R, O>(
  schema: StandardSchemaV1<R, O>,
  value: unknown,
  step: string,
): Promise<O> {
  const result: unknown = await schema['~standard'].validate(value);
  if (typeof result !== 'object' || result === null) {
    throw new ConfigurationError(
      `the schema of step "${step}" answered validate() with ${result === null ? 'null' : typeof result}, not a Standard Schema result`,
    );
  }
  const { issues } = result as { issues?: readonly StandardSchemaV1.Issue[] };
  if (issues) throw new OnceResultError(step, plainIssues(issues));
  return (result as StandardSchemaV1.SuccessResult<O>).value;
}
