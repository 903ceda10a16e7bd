import { CLAUSES } from './consumer-contract-clauses';
import { partitionClause, restartClause, type FaultResult } from './consumer-contract-faults';
import { attemptClause, prepareRun, type ContractRun } from './consumer-contract-run';
import {
  CONSUMER_CONTRACT_CLAUSES,
  type ClauseName,
  type ConsumerContractCheck,
  type ConsumerContractOptions,
} from './consumer-contract-types';

export {
  CONSUMER_CONTRACT_CLAUSES,
  type ConsumerContractCheck,
  type ConsumerContractOptions,
  type ConsumerFeatures,
  type ContractConsumerSettings,
  type ContractLogLine,
  type ContractMessage,
  type PartitionFeature,
  type PartitionLogs,
  type RestartFeature,
} from './consumer-contract-types';

/** The clauses that fault the broker for every client: run after the others, one at a time. */
const FAULT_CLAUSES = ['restart', 'partition'] as const;
type FaultClause = (typeof FAULT_CLAUSES)[number];

/** The clauses that send one id twice, as a producer's copies at two offsets. */
const PRODUCER_COPIES = ['duplicate', 'concurrent', 'extract'] as const;
const WATERMARK_SKIP =
  "dedup 'watermark' does not catch a producer's copies at other offsets (see docs/inbox.md)";

/** Runs a fault clause, or says which feature it lacks. */
async function faultCheck(run: ContractRun, name: FaultClause): Promise<ConsumerContractCheck> {
  const clause = CONSUMER_CONTRACT_CLAUSES[name];
  const { restart, partition } = run.features;
  let result: FaultResult | undefined;
  const started = Date.now();
  if (name === 'restart' && restart !== undefined) {
    result = await attemptFault(() => restartClause(run, restart));
  } else if (name === 'partition' && partition !== undefined) {
    result = await attemptFault(() => partitionClause(run, partition));
  } else {
    return { clause, ok: true, skipped: `the transport gave no features.${name}`, durationMs: 0 };
  }
  const { problem, figures } = result;
  const durationMs = Date.now() - started;
  return problem === undefined
    ? { clause, ok: true, figures, durationMs }
    : { clause, ok: false, problem, figures, durationMs };
}

async function attemptFault(check: () => Promise<FaultResult>): Promise<FaultResult> {
  let result: FaultResult = { problem: undefined, figures: {} };
  const problem = await attemptClause(async () => {
    result = await check();
    return result.problem;
  });
  return { problem, figures: result.figures };
}

/**
 * Checks that a transport's {@link Consumer} keeps the effectively-once contract against its
 * real broker: duplicates and concurrent copies take effect once, failures come back after
 * their delay, poison and bad input are dead-lettered with the shared facts and never lost,
 * `messageId.extract` is used, an outage holds deliveries instead of acking them, a graceful
 * stop drains, and the one lifecycle is kept. Each clause runs on a fresh destination with
 * its own inbox consumer name; the handler writes its effects through `ctx.trx` into a
 * `contract_effects` table the contract creates in the store's schema. The clauses run at
 * the same time, so a broker whose consumers take seconds to join still finishes in about
 * as long as the slowest clause.
 *
 * Then, one after the other, the fault clauses, each only when its feature is given (else it
 * is reported `ok` with `skipped` saying so): `restart` ({@link ConsumerFeatures.restart})
 * stops and starts the broker under load, `partition` ({@link ConsumerFeatures.partition})
 * cuts the network to it under load; both need
 * {@link ConsumerContractOptions.createPublisher}. They take tens of seconds each.
 *
 * Framework-neutral: it resolves to one {@link ConsumerContractCheck} per clause (in the order
 * of {@link CONSUMER_CONTRACT_CLAUSES}) rather than asserting. Not covered: a consumer killed
 * (SIGKILL) mid-delivery; that needs a child process and is each transport's own test.
 *
 * @example
 * ```ts
 * const checks = await checkConsumerContract({ store, newDestination, send, createConsumer });
 * expect(checks.filter((c) => !c.ok)).toEqual([]);
 * ```
 */
export async function checkConsumerContract(
  options: ConsumerContractOptions,
): Promise<ConsumerContractCheck[]> {
  const run = await prepareRun(options);
  const names = (Object.keys(CONSUMER_CONTRACT_CLAUSES) as ClauseName[]).filter(
    (name): name is Exclude<ClauseName, FaultClause> =>
      !(FAULT_CLAUSES as readonly string[]).includes(name),
  );
  const started = Date.now();
  const results = await Promise.all(
    names.map(async (name) => {
      if (run.dedup === 'watermark' && (PRODUCER_COPIES as readonly string[]).includes(name)) {
        return { problem: undefined, durationMs: 0, skipped: WATERMARK_SKIP };
      }
      const problem = await attemptClause(() => CLAUSES[name](run));
      return { problem, durationMs: Date.now() - started, skipped: undefined };
    }),
  );
  const checks: ConsumerContractCheck[] = names.map((name, i) => {
    const clause = CONSUMER_CONTRACT_CLAUSES[name];
    const { problem, durationMs, skipped } = results[i]!;
    if (skipped !== undefined) return { clause, ok: true, skipped, durationMs };
    return problem === undefined
      ? { clause, ok: true, durationMs }
      : { clause, ok: false, problem, durationMs };
  });
  for (const name of FAULT_CLAUSES) checks.push(await faultCheck(run, name));
  return checks;
}
