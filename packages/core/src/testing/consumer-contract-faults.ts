/**
 * The consumer contract's fault clauses: the broker restarted, and the network to it cut,
 * each under load. They run after the other clauses, one at a time, since every client of the
 * broker sees the fault. @internal
 */
import {
  FAULT_AFTER_MS,
  outcomeProblem,
  recoveryAfter,
  recoveryProblem,
  settle,
  startLoad,
  type Load,
  type LoadOutcome,
} from './consumer-contract-load';
import { sleep, type ContractRun } from './consumer-contract-run';
import type { ContractLogLine, PartitionFeature, RestartFeature } from './consumer-contract-types';

/** What a fault clause found: its problem (if any) and what it measured. */
export interface FaultResult {
  readonly problem: string | undefined;
  readonly figures: Readonly<Record<string, unknown>>;
}

/** The load of the restart clause is spread over this long. */
const RESTART_FEED_MS = 10_000;
/** The load of the partition clause goes on this long after the heal. */
const AFTER_HEAL_MS = 6_000;
/** How long the clauses wait for the last events. */
const SETTLE_MS = 60_000;

/** Starts the broker, noting its first answer when the feature can tell. */
async function startNoting(feature: RestartFeature): Promise<number> {
  let answeredAt: number | undefined;
  let starting = true;
  const watching = (async () => {
    if (feature.isUp === undefined) return;
    while (starting && answeredAt === undefined) {
      if (await feature.isUp().catch(() => false)) answeredAt = Date.now();
      else await sleep(100);
    }
  })();
  try {
    await feature.start();
  } finally {
    starting = false;
    await watching;
  }
  return answeredAt ?? Date.now();
}

async function withLoad(
  run: ContractRun,
  clause: 'restart' | 'partition',
  body: (load: Load) => Promise<FaultResult>,
): Promise<FaultResult> {
  const load = await startLoad(run, clause);
  try {
    return await body(load);
  } finally {
    await load.close();
  }
}

/** The broker stopped and started under load. */
export function restartClause(run: ContractRun, feature: RestartFeature): Promise<FaultResult> {
  return withLoad(run, 'restart', async (load) => {
    const feeding = load.feed(RESTART_FEED_MS);
    await sleep(FAULT_AFTER_MS);
    const stoppedAt = Date.now();
    let answeredAt: number;
    let downAt = stoppedAt;
    try {
      await feature.stop();
      downAt = Date.now();
      await sleep(feature.downMs ?? 0);
    } finally {
      // Never leave the broker down, whatever happened.
      answeredAt = await startNoting(feature);
    }
    const ids = await feeding;
    const outcome = await settle(run, load, ids, SETTLE_MS);
    const recovery = recoveryAfter(load, answeredAt);
    // What a broker that comes back empty may lose: messages it accepted before it went down.
    const acceptedBefore = new Set(
      load.published.filter((p) => p.at <= downAt).map((p) => p.messageId),
    );
    const figures = {
      ...outcome,
      missing: outcome.missing.length,
      outageMs: answeredAt - stoppedAt,
      ...recovery,
      transportLog: warnings([...load.logs.consumer, ...load.logs.publisher]).slice(0, 5),
    };
    const problem =
      lossProblem(feature, outcome, acceptedBefore, load) ??
      outcomeProblem(outcome) ??
      recoveryProblem(recovery, feature.recoveryMs ?? 30_000);
    return { problem, figures };
  });
}

/**
 * Problems with what a restart lost: nothing, or, from a broker that comes back empty, only
 * messages it accepted before it went down that no handler had seen (a handler that saw one
 * and did not commit would be the consumer's fault, not the broker's).
 */
function lossProblem(
  feature: RestartFeature,
  outcome: LoadOutcome,
  acceptedBefore: ReadonlySet<string>,
  load: Load,
): string | undefined {
  if (feature.losesMessages !== true) {
    return outcome.lost > 0 ? `lost ${outcome.lost} of ${outcome.events} events` : undefined;
  }
  const after = outcome.missing.filter((id) => !acceptedBefore.has(id)).length;
  if (after > 0) return `lost ${after} messages published after the broker went down`;
  const seen = new Set(load.handled.map((h) => h.messageId));
  const uncommitted = outcome.missing.filter((id) => seen.has(id)).length;
  return uncommitted > 0
    ? `${uncommitted} lost events had been handled, never committed`
    : undefined;
}

/** The warnings and errors of some log lines, for figures and problems. */
function warnings(lines: readonly ContractLogLine[]): string[] {
  return [...new Set(lines.filter((l) => l.level !== 'info').map((l) => l.message))];
}

/** Ms from `since` to the first warning or error of `lines`, or null when none came. */
function noticeMs(lines: readonly ContractLogLine[], since: number): number | null {
  const line = lines.find((l) => l.at >= since && l.level !== 'info');
  return line === undefined ? null : line.at - since;
}

/** Problems with when the consumer and the publisher noticed the cut. */
function noticeProblem(
  feature: PartitionFeature,
  figures: { consumerNoticeMs: number | null; publisherNoticeMs: number | null },
): string | undefined {
  const sides = [
    ['consumer', figures.consumerNoticeMs, feature.noticeMs?.consumer],
    ['publisher', figures.publisherNoticeMs, feature.noticeMs?.publisher],
  ] as const;
  for (const [side, got, bound] of sides) {
    if (bound === undefined) continue;
    if (got === null) return `the ${side} never logged a warning about the cut`;
    if (got >= bound) return `the ${side} noticed the cut after ${got} ms, not within ${bound}`;
  }
  return undefined;
}

/** The network to the broker cut under load, then healed. */
export function partitionClause(run: ContractRun, feature: PartitionFeature): Promise<FaultResult> {
  return withLoad(run, 'partition', async (load) => {
    const feeding = load.feed(FAULT_AFTER_MS + feature.cutMs + AFTER_HEAL_MS);
    await sleep(FAULT_AFTER_MS);
    // Both measured from the start of the step: its first rule may already take effect.
    const cutAt = Date.now();
    let healedAt: number;
    try {
      await feature.cut();
      await sleep(feature.cutMs);
    } finally {
      healedAt = Date.now();
      await feature.heal();
    }
    const ids = await feeding;
    const outcome = await settle(run, load, ids, SETTLE_MS);
    const recovery = recoveryAfter(load, healedAt);
    const logs = { cutAt, healedAt, ...load.logs };
    const figures = {
      ...outcome,
      missing: outcome.missing.length,
      cutMs: healedAt - cutAt,
      consumerNoticeMs: noticeMs(load.logs.consumer, cutAt),
      publisherNoticeMs: noticeMs(load.logs.publisher, cutAt),
      relayNoticeMs: noticeMs(load.logs.relay, cutAt),
      ...recovery,
      publishedDuringCut: load.published.filter((p) => p.at > cutAt && p.at < healedAt).length,
      consumerWarnings: warnings(load.logs.consumer),
      publisherWarnings: warnings(load.logs.publisher),
    };
    const problem =
      (outcome.lost > 0 ? `lost ${outcome.lost} of ${outcome.events} events` : undefined) ??
      outcomeProblem(outcome) ??
      noticeProblem(feature, figures) ??
      feature.checkLogs?.(logs) ??
      recoveryProblem(recovery, feature.recoveryMs ?? 8_000);
    return { problem, figures };
  });
}
