import { NEVER_ABORTED, crashPoint } from '@justonce/core/transport';
import {
  isOperationConflictError,
  isOperationFailedError,
  isOperationInProgressError,
  OnceUnavailableError,
  type Once,
} from '@justonce/core';
import { RollbackError } from '../errors/rollback-error';
import { fingerprintOf, type RequestView } from './fingerprint';
import type { IdempotencyContext } from './options';
import { parseIdempotencyKey } from './parse-key';
import {
  inProgress,
  keyFailed,
  keyMalformed,
  keyMissing,
  keyReused,
  noScope,
  PROBLEM_CONTENT_TYPE,
  problemBody,
  type Problem,
} from './problem';
import type { ResolvedRoute } from './resolve-options';
import { IDEMPOTENT_REPLAYED_HEADER, type HeldResponse } from './response';
import { fromStoredResponse, toStoredResponse } from './stored-response';
import { traceOperation } from './trace-operation';
import { throughGate } from './shed';

/**
 * What the adapter does with a request once the engine has decided:
 * - `respond`: send `response` (a problem, or a replay), the handler did not run;
 * - `committed`: the handler's response was stored and its transaction committed: send it;
 * - `rolled-back`: the handler answered a status the route does not store; its transaction
 *   rolled back and the key is free for a retry: send the response;
 * - `threw`: the handler threw; its transaction rolled back and the key is free for a
 *   retry: send `errorResponse(error, route.logger, …)` (what this package's adapters do),
 *   or hand the error to the framework.
 * Anything else (the store is down, the lease was lost before the commit) rejects.
 */
export type Outcome =
  | { readonly kind: 'respond'; readonly response: HeldResponse }
  | { readonly kind: 'committed'; readonly response: HeldResponse }
  | { readonly kind: 'rolled-back'; readonly response: HeldResponse }
  | { readonly kind: 'threw'; readonly error: unknown };

/**
 * Runs the route's handler in the business transaction and resolves to its response, which
 * the adapter holds (does not send) until the engine says so. `signal` aborts when the
 * operation's lease is lost: the adapter should then give up waiting for the handler.
 */
export type RunHandler = (
  context: IdempotencyContext,
  signal: AbortSignal,
) => Promise<HeldResponse>;

/** The request as the engine needs it: the framework's object, its view, the key field. */
export interface EngineRequest<Req> {
  readonly request: Req;
  readonly view: RequestView;
  /** The `Idempotency-Key` field (see `parseIdempotencyKey`). */
  readonly keyField: string | readonly string[] | undefined;
}

/**
 * The engine, the same for every framework: reads the key, finds the scope, makes the
 * fingerprint, then runs the handler through `operations.runInTransaction` (or a plain
 * transaction for a keyless request on a route where the key is optional) and says what to
 * send. See docs/http.md for the table of cases. With the route's `resilience` option, an
 * open breaker answers 503 and a spent retry budget 429 (see docs/load-shedding.md).
 */
export async function handleRequest<Req>(
  route: ResolvedRoute<Req>,
  input: EngineRequest<Req>,
  runHandler: RunHandler,
): Promise<Outcome> {
  return traceOperation(route.operation, input.view, () => {
    const gate = route.resilience;
    if (gate === undefined) return decide(route, input, runHandler);
    return throughGate(gate, input.request, () => decide(route, input, runHandler));
  });
}

/** {@link handleRequest} without its span and the route's `resilience` gate. */
async function decide<Req>(
  route: ResolvedRoute<Req>,
  input: EngineRequest<Req>,
  runHandler: RunHandler,
): Promise<Outcome> {
  const parsed = parseIdempotencyKey(input.keyField, route.maxKeyLength);
  if (parsed.kind === 'invalid') return problem(keyMalformed(parsed.reason, route.maxKeyLength));
  if (parsed.kind === 'absent') {
    if (route.required) return problem(keyMissing());
    return runPlain(route, runHandler);
  }
  let scope: string | undefined;
  if (route.scope !== 'shared') {
    scope = await route.scope(input.request);
    if (scope === undefined || scope === '') return problem(noScope());
  }
  const fingerprint = await fingerprintOf(route.fingerprint, input.request, input.view);
  return runKeyed(route, parsed.key, scope, fingerprint, runHandler);
}

async function runKeyed<Req>(
  route: ResolvedRoute<Req>,
  key: string,
  scope: string | undefined,
  fingerprint: unknown,
  runHandler: RunHandler,
): Promise<Outcome> {
  const execution = new Execution(route, runHandler);
  let stored: unknown;
  try {
    stored = await route.operations.runInTransaction(
      key,
      fingerprint,
      async (trx, ctx) => {
        const response = await execution.run({ trx, key, once: ctx.once }, ctx.signal);
        return toStoredResponse(response, route.storedHeaders);
      },
      {
        operation: route.operation,
        ...(scope === undefined ? {} : { scope }),
        ...(route.retentionMs === undefined ? {} : { retentionMs: route.retentionMs }),
        ...(route.waitMs === undefined ? {} : { waitForInProgressMs: route.waitMs }),
      },
    );
  } catch (error) {
    const rolledBack = execution.rolledBack(error);
    if (rolledBack !== undefined) return rolledBack;
    if (isOperationConflictError(error)) return problem(keyReused());
    if (isOperationInProgressError(error)) return problem(inProgress());
    if (isOperationFailedError(error)) return problem(keyFailed());
    throw error;
  }
  const held = execution.held;
  if (held !== undefined) {
    crashPoint('http.after-commit');
    return { kind: 'committed', response: held };
  }
  const replay = fromStoredResponse(stored);
  return {
    kind: 'respond',
    response: { ...replay, headers: [...replay.headers, [IDEMPOTENT_REPLAYED_HEADER, 'true']] },
  };
}

/** A keyless request on a route where the key is optional: the same, with no record. */
async function runPlain<Req>(route: ResolvedRoute<Req>, runHandler: RunHandler): Promise<Outcome> {
  const execution = new Execution(route, runHandler);
  try {
    const response = await route.operations.transactions.transaction((trx) =>
      execution.run({ trx, key: undefined, once: keylessOnce }, NEVER_ABORTED),
    );
    return { kind: 'committed', response };
  } catch (error) {
    const rolledBack = execution.rolledBack(error);
    if (rolledBack !== undefined) return rolledBack;
    throw error;
  }
}

/** `once` of a keyless request: no record to key its steps by. */
const keylessOnce: Once = async () => {
  throw new OnceUnavailableError('the request has no Idempotency-Key to record its steps under');
};

/** One run of the handler inside a transaction, and what it left. */
class Execution<Req> {
  /** The handler's response, once it is to be stored. */
  held: HeldResponse | undefined;
  private rollback: RollbackError | undefined;

  constructor(
    private readonly route: ResolvedRoute<Req>,
    private readonly runHandler: RunHandler,
  ) {}

  /**
   * Runs the handler; resolves to its response when it is to be stored (and committed), or
   * throws a {@link RollbackError} (retriable) to roll the transaction back when the handler
   * threw or answered a status that is not stored.
   */
  async run(context: IdempotencyContext, signal: AbortSignal): Promise<HeldResponse> {
    let response: HeldResponse;
    try {
      response = await this.runHandler(context, signal);
    } catch (error) {
      this.rollback = new RollbackError({ kind: 'threw', error });
      throw this.rollback;
    }
    if (!this.route.storeStatuses(response.status)) {
      this.rollback = new RollbackError({ kind: 'response', response });
      throw this.rollback;
    }
    this.held = response;
    return response;
  }

  /** The outcome when `error` is this execution's own rollback; otherwise `undefined`. */
  rolledBack(error: unknown): Outcome | undefined {
    if (this.rollback === undefined || error !== this.rollback) return undefined;
    const { outcome } = this.rollback;
    return outcome.kind === 'response'
      ? { kind: 'rolled-back', response: outcome.response }
      : { kind: 'threw', error: outcome.error };
  }
}

function problem(details: Problem): Outcome {
  const headers: [string, string][] = [['content-type', PROBLEM_CONTENT_TYPE]];
  if (details.status === 409) headers.push(['retry-after', '1']);
  return {
    kind: 'respond',
    response: { status: details.status, headers, body: problemBody(details) },
  };
}
