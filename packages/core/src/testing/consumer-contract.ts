import type { ContractCheck } from './publisher-contract';
import { CLAUSES } from './consumer-contract-clauses';
import { attemptClause, prepareRun } from './consumer-contract-run';
import {
  CONSUMER_CONTRACT_CLAUSES,
  type ClauseName,
  type ConsumerContractOptions,
} from './consumer-contract-types';

export {
  CONSUMER_CONTRACT_CLAUSES,
  type ConsumerContractOptions,
  type ConsumerFeatures,
  type ContractConsumerSettings,
  type ContractMessage,
} from './consumer-contract-types';

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
 * Framework-neutral: it resolves to one {@link ContractCheck} per clause (in the order of
 * {@link CONSUMER_CONTRACT_CLAUSES}) rather than asserting. Not covered: a consumer killed
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
): Promise<ContractCheck[]> {
  const run = await prepareRun(options);
  const names = Object.keys(CONSUMER_CONTRACT_CLAUSES) as ClauseName[];
  const problems = await Promise.all(names.map((name) => attemptClause(() => CLAUSES[name](run))));
  return names.map((name, i) => {
    const clause = CONSUMER_CONTRACT_CLAUSES[name];
    const problem = problems[i];
    return problem === undefined ? { clause, ok: true } : { clause, ok: false, problem };
  });
}
