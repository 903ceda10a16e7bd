/** The clauses of the consumer contract, one function each. @internal */
import {
  MAX_ATTEMPTS,
  OUTAGE_TRIES,
  TIMER_SLACK_MS,
  type Seen,
  type ContractRun,
  type ClauseSetup,
  bodyText,
  ContractOutageError,
  sleep,
  open,
  withConsumer,
  actions,
  onceProblem,
  factsProblem,
  rejectsWithState,
} from './consumer-contract-run';
import type { ClauseName } from './consumer-contract-types';
import { resilienceClause } from './consumer-contract-resilience';

async function duplicateClause(run: ContractRun): Promise<string | undefined> {
  return withConsumer(run, 'duplicate', {}, async (opened) => {
    const id = `${run.tag}-dup`;
    await opened.send([
      { id, body: 'duplicate' },
      { id, body: 'duplicate' },
    ]);
    return onceProblem(opened, id, 2);
  });
}

async function concurrentClause(run: ContractRun): Promise<string | undefined> {
  // A slow handler keeps the first copy's transaction open while the second one arrives.
  const setup: ClauseSetup = { concurrency: 2, before: () => sleep(300) };
  return withConsumer(run, 'concurrent', setup, async (opened) => {
    const id = `${run.tag}-concurrent`;
    // Under one key an ordering broker would hand them out one after the other.
    const keys = run.features.ordersByKey === true ? ['k-1', 'k-2'] : [undefined, undefined];
    await opened.send(
      keys.map((key) => ({ id, body: 'concurrent', ...(key === undefined ? {} : { key }) })),
    );
    return onceProblem(opened, id, 2);
  });
}

async function redeliveryClause(run: ContractRun): Promise<string | undefined> {
  let calls = 0;
  const setup: ClauseSetup = {
    before: () => {
      calls += 1;
      if (calls === 1) throw new Error('the contract fails the first attempt');
    },
  };
  return withConsumer(run, 'redelivery', setup, async (opened) => {
    const id = `${run.tag}-redelivery`;
    await opened.send([{ id, body: 'redelivery' }]);
    const problem = await onceProblem(opened, id, 1);
    if (problem !== undefined) return problem;
    const seen = opened.of(id);
    const failed = seen.find((s) => s.event.action === 'redelivered');
    const acked = seen.find((s) => s.event.action === 'acked');
    if (failed === undefined || acked === undefined || failed.at > acked.at) {
      return `wanted redelivered then acked, settled ${actions(opened, id)}`;
    }
    const delayMs = failed.event.delayMs ?? 0;
    const waited = acked.at - failed.at;
    return waited + TIMER_SLACK_MS >= delayMs
      ? undefined
      : `redelivered after ${waited} ms, before its delay of ${delayMs} ms`;
  });
}

async function poisonClause(run: ContractRun): Promise<string | undefined> {
  const receiveCounts: Array<number | undefined> = [];
  const setup: ClauseSetup = {
    inbox: { maxAttempts: MAX_ATTEMPTS },
    before: (ctx) => {
      receiveCounts.push(ctx.message.delivery.receiveCount);
      throw new Error('the contract poisons this message');
    },
  };
  return withConsumer(run, 'poison', setup, async (opened) => {
    const id = `${run.tag}-poison`;
    await opened.send([{ id, body: 'poison' }]);
    const last = (): Seen | undefined => opened.of(id).at(-1);
    if (!(await opened.until(() => last()?.event.action === 'dead-lettered'))) {
      return `wanted dead-lettered, settled ${actions(opened, id)}`;
    }
    const problem = factsProblem(opened, (last() as Seen).event);
    if (problem !== undefined) return problem;
    if (run.features.reportsReceiveCount === true && receiveCounts.some((n, i) => n !== i + 1)) {
      return `receiveCount went ${receiveCounts.join(', ')}, not 1, 2, 3…`;
    }
    const effects = await opened.effects();
    return effects === 0 ? undefined : `the poison message took effect ${effects} times`;
  });
}

async function badInputClause(run: ContractRun): Promise<string | undefined> {
  const undecodable = 'undecodable';
  const setup: ClauseSetup = {
    inbox: {
      decode: (body) => {
        const text = bodyText(body);
        if (text === undecodable) throw new Error('the contract cannot decode this body');
        return text;
      },
    },
  };
  return withConsumer(run, 'badInput', setup, async (opened) => {
    const id = `${run.tag}-undecodable`;
    await opened.send([{ body: 'no id' }, { id, body: undecodable }]);
    const reasons = (): string[] =>
      opened.seen.flatMap((s) => (s.event.deadLetter ? [s.event.deadLetter.reason] : []));
    if (!(await opened.until(() => reasons().length >= 2))) {
      return `wanted 2 dead letters, settled ${opened.seen.map((s) => s.event.action).join(', ') || 'nothing'}`;
    }
    const got = reasons().sort().join(', ');
    if (got !== 'MISSING_MESSAGE_ID, UNDECODABLE_BODY') return `dead-letter reasons: ${got}`;
    // Never lost: the store keeps both, and neither comes back.
    await sleep(300);
    const others = opened.seen.filter((s) => s.event.action !== 'dead-lettered');
    if (others.length > 0) return `also settled ${others.map((s) => s.event.action).join(', ')}`;
    const stored = await opened.deadLetters();
    if (stored !== 2) return `the store holds ${stored} dead letters, not 2`;
    const effects = await opened.effects();
    return effects === 0 ? undefined : `bad input took effect ${effects} times`;
  });
}

async function extractClause(run: ContractRun): Promise<string | undefined> {
  const extract = (text: string): string | undefined => (JSON.parse(text) as { id?: string }).id;
  return withConsumer(
    run,
    'extract',
    { messageId: { extract, fallback: false } },
    async (opened) => {
      const id = `${run.tag}-extracted`;
      const body = JSON.stringify({ id, text: 'the id is in the body' });
      await opened.send([{ body }, { body }]);
      return onceProblem(opened, id, 2);
    },
  );
}

async function outageClause(run: ContractRun): Promise<string | undefined> {
  let calls = 0;
  const setup: ClauseSetup = {
    inbox: {
      classify: (error) =>
        (error as Error | undefined)?.name === 'ContractOutageError' ? 'infrastructure' : undefined,
    },
    before: () => {
      calls += 1;
      if (calls <= OUTAGE_TRIES) throw new ContractOutageError();
    },
  };
  return withConsumer(run, 'outage', setup, async (opened) => {
    const id = `${run.tag}-outage`;
    await opened.send([{ id, body: 'outage' }]);
    const problem = await onceProblem(opened, id, 1);
    if (problem !== undefined) return problem;
    const got = opened.of(id).map((s) => s.event.action);
    const ackedAt = got.indexOf('acked');
    if (!got.slice(0, ackedAt).includes('held')) return `never held: ${got.join(', ')}`;
    if (got.filter((a) => a === 'acked').length !== 1)
      return `acked more than once: ${got.join(', ')}`;
    const dead = await opened.deadLetters();
    return dead === 0 ? undefined : `the outage left ${dead} dead letters`;
  });
}

async function drainClause(run: ContractRun): Promise<string | undefined> {
  let started = 0;
  const setup: ClauseSetup = {
    concurrency: 2,
    before: async () => {
      started += 1;
      await sleep(500);
    },
  };
  const opened = await open(run, 'drain', setup);
  const ids = run.features.batchMode === true ? ['a', 'b'] : ['a'];
  const sent = ids.map((n) => `${run.tag}-drain-${n}`);
  try {
    await opened.send(sent.map((id) => ({ id, body: 'drain' })));
    if (!(await opened.until(() => started >= sent.length))) return 'the handler never started';
  } finally {
    await opened.consumer.stop({ timeoutMs: run.timeoutMs });
  }
  for (const id of sent) {
    if (!opened.of(id).some((s) => s.event.action === 'acked')) {
      return `${id} was not acked before stop resolved: ${actions(opened, id)}`;
    }
  }
  const effects = await opened.effects();
  return effects === sent.length ? undefined : `${effects} effects for ${sent.length} messages`;
}

async function lifecycleClause(run: ContractRun): Promise<string | undefined> {
  const opened = await open(run, 'lifecycle', {});
  if (!opened.consumer.running) return 'running is false after start';
  if (!(await rejectsWithState(opened.consumer.start()))) {
    await opened.consumer.stop();
    return 'a second start did not reject with ConsumerStateError';
  }
  await opened.consumer.stop();
  if (opened.consumer.running) return 'running is true after stop';
  await opened.consumer.stop();
  if (!(await rejectsWithState(opened.consumer.start()))) {
    return 'a start after stop did not reject with ConsumerStateError';
  }
  return undefined;
}

/** The clauses that run side by side; the fault clauses are in `consumer-contract-faults`. */
export const CLAUSES: Readonly<
  Record<
    Exclude<ClauseName, 'restart' | 'partition'>,
    (run: ContractRun) => Promise<string | undefined>
  >
> = {
  duplicate: duplicateClause,
  concurrent: concurrentClause,
  redelivery: redeliveryClause,
  poison: poisonClause,
  badInput: badInputClause,
  extract: extractClause,
  outage: outageClause,
  drain: drainClause,
  lifecycle: lifecycleClause,
  resilience: resilienceClause,
};
