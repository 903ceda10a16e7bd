import { classifyError } from '@justonce/core/retry';
import type { ResilienceGate } from '@justonce/core/transport';
import type { Outcome } from './handle-request';
import {
  circuitOpen,
  PROBLEM_CONTENT_TYPE,
  problemBody,
  retryBudgetSpent,
  type Problem,
} from './problem';

/** How an outcome bears on the route's dependencies: the breaker's verdict. */
function verdictOf(outcome: Outcome): 'success' | 'failure' | 'neutral' {
  switch (outcome.kind) {
    case 'committed':
      return 'success';
    case 'respond':
      // A replay or a refused key says nothing of the dependencies.
      return 'neutral';
    case 'rolled-back':
      return outcome.response.status >= 500 ? 'failure' : 'success';
    case 'threw':
      // A final error (a 4xx of its own, `markNonRetriable`) means the dependency answered.
      return classifyError(outcome.error) === 'non-retriable' ? 'success' : 'failure';
  }
}

/** A problem answered without (or instead of) the handler's response, with `Retry-After`. */
function shed(problem: Problem, retryAfterMs: number): Outcome {
  const seconds = Math.max(1, Math.ceil(retryAfterMs / 1000));
  return {
    kind: 'respond',
    response: {
      status: problem.status,
      headers: [
        ['content-type', PROBLEM_CONTENT_TYPE],
        ['retry-after', String(seconds)],
      ],
      body: problemBody(problem),
    },
  };
}

/**
 * Runs one request of a route with a `resilience` option through its gate (the same one
 * every consumer's option builds, from core): an open breaker answers 503 with `Retry-After`
 * (seconds until its probe) without running anything; each request earns the budget its
 * ratio of a retry; a failure (a thrown retriable error, a 5xx rollback, the store down) is
 * reported to the breaker and spends one retry, and when the budget cannot pay it the
 * request gets 429 with `Retry-After` (`budget.spentDelayMs`) instead of its error. @internal
 */
export async function throughGate<Req>(
  gate: ResilienceGate<Req>,
  request: Req,
  run: () => Promise<Outcome>,
): Promise<Outcome> {
  const key = gate.keyOf(request);
  const admitted = gate.admit(key);
  if (!admitted.admitted) return shed(circuitOpen(), admitted.retryAfterMs);
  gate.earn();
  let outcome: Outcome;
  try {
    outcome = await run();
  } catch (error) {
    // The engine rejects when the store is down: an outage of the route's own dependency.
    gate.report(admitted, 'failure');
    throw error;
  }
  const verdict = verdictOf(outcome);
  gate.report(admitted, verdict);
  if (verdict !== 'failure' || gate.spend(key)) return outcome;
  return shed(retryBudgetSpent(), gate.spentDelayMs);
}
