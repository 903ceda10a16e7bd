/** The consumer contract's `resilience` clause: a downstream that fails for a while. @internal */
import { isCircuitOpenError } from '../retry/errors/circuit-open-error';
import { actions, withConsumer, type ClauseSetup, type ContractRun } from './consumer-contract-run';

/** How long the clause's downstream fails, from the first handler call. */
export const DOWNSTREAM_OUTAGE_MS = 1_500;
/** The clause's breaker: open after 2 failures in a row, probe every 250 ms. */
const TRIP = 2;
const OPEN_MS = 250;
const MESSAGES = 4;
/**
 * Handler calls the outage may cost: the failures that trip the breaker, one probe per open
 * interval, and one in flight on each side of a state change. Without the breaker each of
 * the messages would fail every 50–200 ms (the contract's backoff) and be dead-lettered
 * after 5 attempts.
 */
export const OUTAGE_CALL_BOUND = TRIP + Math.ceil(DOWNSTREAM_OUTAGE_MS / OPEN_MS) + 2;

/** The error of the clause's downstream: unclassified, so transient (an infrastructure failure). */
class ContractDownstreamError extends Error {
  constructor() {
    super('the contract downstream is down');
    this.name = 'ContractDownstreamError';
  }
}

export async function resilienceClause(run: ContractRun): Promise<string | undefined> {
  let firstCallAt: number | undefined;
  let failedCalls = 0;
  const setup: ClauseSetup = {
    inbox: { maxAttempts: TRIP + 3 },
    resilience: {
      breaker: { trip: { consecutiveFailures: TRIP }, openMs: OPEN_MS },
      budget: { minRetriesPerSecond: 1, windowMs: 1_000, spentDelayMs: 300 },
    },
    before: () => {
      firstCallAt ??= Date.now();
      if (Date.now() - firstCallAt < DOWNSTREAM_OUTAGE_MS) {
        failedCalls += 1;
        throw new ContractDownstreamError();
      }
    },
  };
  return withConsumer(run, 'resilience', setup, async (opened) => {
    const ids = Array.from({ length: MESSAGES }, (_, i) => `${run.tag}-resilience-${i}`);
    await opened.send(ids.map((id) => ({ id, body: 'resilience' })));
    const acked = (id: string): boolean => opened.of(id).some((s) => s.event.action === 'acked');
    if (!(await opened.until(() => ids.every(acked)))) {
      const missing = ids.filter((id) => !acked(id));
      return `flow did not resume: ${missing.map((id) => `${id}: ${actions(opened, id)}`).join('; ')}`;
    }
    // Held in process, or (SQS, while its intake is paused) given back until the probe.
    const shed = (s: (typeof opened.seen)[number]): boolean =>
      s.event.action === 'held' ||
      (s.event.action === 'released' && isCircuitOpenError(s.event.error));
    if (!opened.seen.some(shed)) {
      return 'no delivery was held: did createConsumer pass settings.resilience on?';
    }
    if (failedCalls > OUTAGE_CALL_BOUND) {
      return `the outage cost ${failedCalls} handler calls, over the bound of ${OUTAGE_CALL_BOUND}`;
    }
    const dead = await opened.deadLetters();
    if (dead > 0) return `the outage left ${dead} dead letters`;
    const effects = await opened.effects();
    return effects === MESSAGES ? undefined : `${effects} effects for ${MESSAGES} messages`;
  });
}
