import { optionKeys, rejectUnknownOptions } from '../config/options';
import { ConfigurationError } from '../errors';
import { createInbox } from '../inbox';
import type { Handler, HandlerContext, Inbox, InboxOptions } from '../inbox/types';
import type { Store } from '../store/store';
import type { Consumer, SettledEvent } from '../transport/consumer';
import type { ContractCheck } from './publisher-contract';

/** A message the contract sends, in neutral terms; the test maps it to its broker's message. */
export interface ContractMessage {
  /** Sent in the `message-id` header; absent means the message has no id. */
  readonly id?: string;
  /** The body, as text. */
  readonly body: string;
  /** Further headers. */
  readonly headers?: Readonly<Record<string, string>>;
  /** Partition key (a Kafka key, a message group), when the broker has them. */
  readonly key?: string;
}

/** What the contract asks of the consumer; the test maps it to its consumer's options. */
export interface ContractConsumerSettings {
  /** The inbox: pass as the consumer's `inbox`. */
  readonly inbox: Inbox;
  /** The handler: pass as the consumer's `handler`. */
  readonly handler: Handler;
  /** Pass as the consumer's `onSettled`. */
  readonly onSettled: (event: SettledEvent) => void;
  /**
   * The consumer's `messageId` option. `extract` reads the body text; the transport maps it
   * onto its own message type: `extract: (m) => settings.messageId.extract?.(bodyTextOf(m))`.
   */
  readonly messageId: {
    readonly extract?: (bodyText: string) => string | undefined;
    readonly fallback: boolean;
  };
  /** The consumer's `concurrency`, when the clause needs more than one at a time. */
  readonly concurrency?: number;
}

/** What the broker under test does, which changes what some clauses send or expect. */
export interface ConsumerFeatures {
  /**
   * One key's messages are delivered one after the other (a Kafka partition, a FIFO group):
   * the concurrent-delivery clause then sends its two copies under two keys.
   */
  readonly ordersByKey?: boolean;
  /** Deliveries carry `receiveCount`: the poison clause then checks it grows 1, 2, 3… */
  readonly reportsReceiveCount?: boolean;
  /** The consumer hands batches to `processBatch`: the drain clause then drains two at once. */
  readonly batchMode?: boolean;
}

/** Options of {@link checkConsumerContract}. */
export interface ConsumerContractOptions {
  /** A migrated store; the contract creates its `contract_effects` table in its schema. */
  readonly store: Store;
  /** A new, empty destination (topic, queue) the consumer reads and `send` writes to. */
  readonly newDestination: () => Promise<string>;
  /** Sends messages to a destination, in order. */
  readonly send: (destination: string, messages: readonly ContractMessage[]) => Promise<void>;
  /** The transport's consumer of `destination`, not started, built from `settings`. */
  readonly createConsumer: (destination: string, settings: ContractConsumerSettings) => Consumer;
  /** What the broker does; see {@link ConsumerFeatures}. Default: none of them. */
  readonly features?: ConsumerFeatures;
  /** How long a clause waits for what it expects. Default 15 000 ms. */
  readonly timeoutMs?: number;
}

/** The clauses, as {@link ContractCheck.clause} names them, in the order they are reported. */
export const CONSUMER_CONTRACT_CLAUSES = {
  duplicate: 'a duplicate message id takes effect once; both copies are acked',
  concurrent: 'two concurrent deliveries of one id take effect once',
  redelivery: 'a failure is redelivered after its delay, then acked',
  poison: 'a poison message is dead-lettered after maxAttempts with the shared facts, no effect',
  badInput: 'a message without an id and one with an undecodable body are dead-lettered, not lost',
  extract: 'messageId.extract is honoured: an id from the body deduplicates',
  outage: 'a failing store means no ack: the delivery is held, then acked once',
  drain: 'a graceful stop lets in-flight work commit and be acked before it resolves',
  lifecycle: 'start twice and start after stop reject with ConsumerStateError; stop twice resolves',
} as const;

type ClauseName = keyof typeof CONSUMER_CONTRACT_CLAUSES;

const KEYS = optionKeys<ConsumerContractOptions>()([
  'store',
  'newDestination',
  'send',
  'createConsumer',
  'features',
  'timeoutMs',
]);
const FEATURE_KEYS = optionKeys<ConsumerFeatures>()([
  'ordersByKey',
  'reportsReceiveCount',
  'batchMode',
]);

/** Attempts of the poison clause's inbox: small, so the contract stays short. */
const MAX_ATTEMPTS = 3;
/** Retry delays of the contract's inboxes: short, so the contract stays short. */
const BACKOFF = { baseMs: 50, capMs: 200 } as const;
/** Failed tries of the outage clause before its "store" comes back. */
const OUTAGE_TRIES = 3;
/** A timer's lateness or earliness the redelivery clause tolerates. */
const TIMER_SLACK_MS = 50;

/** A settled event and when it arrived. */
interface Seen {
  readonly event: SettledEvent;
  readonly at: number;
}

/** What the clauses share. */
interface ContractRun {
  readonly options: ConsumerContractOptions;
  readonly features: ConsumerFeatures;
  readonly timeoutMs: number;
  /** The effects table, quoted and qualified. */
  readonly table: string;
  /** A tag that keeps this run's consumer names and ids apart from other runs'. */
  readonly tag: string;
}

/** One clause's consumer on its own destination, with what it settled. */
interface Opened {
  readonly run: ContractRun;
  readonly destination: string;
  /** The inbox's consumer name. */
  readonly name: string;
  readonly consumer: Consumer;
  readonly seen: Seen[];
  /** Sends on this clause's destination. */
  send(messages: readonly ContractMessage[]): Promise<void>;
  /** Settled events of a message id (`undefined`: of messages without one). */
  of(id: string | undefined): Seen[];
  /** Effects the handler committed for this clause. */
  effects(): Promise<number>;
  /** Dead letters the store holds for this clause's consumer. */
  deadLetters(): Promise<number>;
  /** Waits until `done` holds (true) or the clause's time is up (false). */
  until(done: () => boolean): Promise<boolean>;
}

/** What a clause changes in its consumer and inbox. */
interface ClauseSetup {
  readonly inbox?: Partial<Omit<InboxOptions, 'store' | 'consumer'>>;
  /** Runs before the effect is written; a throw fails the attempt. */
  readonly before?: (ctx: HandlerContext) => Promise<void> | void;
  readonly messageId?: ContractConsumerSettings['messageId'];
  readonly concurrency?: number;
}

/** The test error of the outage clause, which its inbox's `classify` calls infrastructure. */
class ContractOutageError extends Error {
  constructor() {
    super('the contract simulates an outage of a dependency');
    this.name = 'ContractOutageError';
  }
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
  const problems = await Promise.all(names.map((name) => attempt(() => CLAUSES[name](run))));
  return names.map((name, i) => {
    const clause = CONSUMER_CONTRACT_CLAUSES[name];
    const problem = problems[i];
    return problem === undefined ? { clause, ok: true } : { clause, ok: false, problem };
  });
}

/** Validates the options and creates the effects table. */
async function prepareRun(options: ConsumerContractOptions): Promise<ContractRun> {
  rejectUnknownOptions(options, KEYS, 'checkConsumerContract');
  rejectUnknownOptions(options.features, FEATURE_KEYS, 'checkConsumerContract', 'features');
  const { store, newDestination, send, createConsumer } = options;
  if (
    typeof store?.knex !== 'function' ||
    typeof newDestination !== 'function' ||
    typeof send !== 'function' ||
    typeof createConsumer !== 'function'
  ) {
    throw new ConfigurationError(
      'checkConsumerContract needs a store, newDestination, send and createConsumer',
    );
  }
  const timeoutMs = options.timeoutMs ?? 15_000;
  if (typeof timeoutMs !== 'number' || !(timeoutMs > 0)) {
    throw new ConfigurationError('timeoutMs must be a number of milliseconds above 0', {
      timeoutMs,
    });
  }
  const table = store.names.table('contract_effects');
  await store.knex.raw(
    `create table if not exists ${table} (consumer text not null, message_id text not null, body text not null)`,
  );
  const tag = Math.random().toString(36).slice(2, 10);
  return { options, features: options.features ?? {}, timeoutMs, table, tag };
}

/** Runs `check`, turning a throw into the problem it describes. */
async function attempt(check: () => Promise<string | undefined>): Promise<string | undefined> {
  try {
    return await check();
  } catch (error) {
    return `threw ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}`;
  }
}

/** The body of a delivery as text, whatever its type. */
function bodyText(body: Uint8Array | string): string {
  return typeof body === 'string' ? body : new TextDecoder().decode(body);
}

/** Resolves after `ms`. */
function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** The handler of every clause: the clause's step, then one effect row in `ctx.trx`. */
function effectHandler(run: ContractRun, name: string, setup: ClauseSetup): Handler {
  return async (ctx) => {
    await setup.before?.(ctx);
    await ctx.trx.raw(`insert into ${run.table} (consumer, message_id, body) values (?, ?, ?)`, [
      name,
      ctx.messageId,
      bodyText(ctx.message.body),
    ]);
  };
}

/** Counts rows of `table` for one consumer. */
async function countRows(store: Store, table: string, consumer: string): Promise<number> {
  const result = await store.knex.raw(`select count(*) as n from ${table} where consumer = ?`, [
    consumer,
  ]);
  return Number((result as { rows: Array<{ n: unknown }> }).rows[0]?.n ?? 0);
}

/** Opens a clause: its destination, inbox and started consumer. */
async function open(run: ContractRun, clause: ClauseName, setup: ClauseSetup): Promise<Opened> {
  const { store } = run.options;
  const destination = await run.options.newDestination();
  const name = `contract-${run.tag}-${clause}`;
  const inbox = createInbox({ backoff: BACKOFF, ...setup.inbox, store, consumer: name });
  const seen: Seen[] = [];
  const consumer = run.options.createConsumer(destination, {
    inbox,
    handler: effectHandler(run, name, setup),
    onSettled: (event) => seen.push({ event, at: Date.now() }),
    messageId: setup.messageId ?? { fallback: false },
    ...(setup.concurrency === undefined ? {} : { concurrency: setup.concurrency }),
  });
  await consumer.start();
  return {
    run,
    destination,
    name,
    consumer,
    seen,
    send: (messages) => run.options.send(destination, messages),
    of: (id) => seen.filter((s) => s.event.messageId === id),
    effects: () => countRows(store, run.table, name),
    deadLetters: () => countRows(store, store.names.table('dead_letters'), name),
    until: (done) => waitUntil(done, run.timeoutMs),
  };
}

/** Polls `done` until it holds or `timeoutMs` passed. */
async function waitUntil(done: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (!done()) {
    if (Date.now() > deadline) return false;
    await sleep(20);
  }
  return true;
}

/** Runs a clause on its own consumer, which is stopped afterwards whatever happened. */
async function withConsumer(
  run: ContractRun,
  clause: ClauseName,
  setup: ClauseSetup,
  body: (opened: Opened) => Promise<string | undefined>,
): Promise<string | undefined> {
  const opened = await open(run, clause, setup);
  try {
    return await body(opened);
  } finally {
    // A consumer that cannot stop is reported by the lifecycle clause, not here.
    await opened.consumer.stop({ timeoutMs: 2_000 }).catch(() => undefined);
  }
}

/** The actions settled for `id`, in order, as text for problems. */
function actions(opened: Opened, id: string | undefined): string {
  return (
    opened
      .of(id)
      .map((s) => s.event.action)
      .join(', ') || 'nothing'
  );
}

/** `count` copies of one id all end acked, with one effect and no dead letter. */
async function onceProblem(opened: Opened, id: string, count: number): Promise<string | undefined> {
  const acked = (): number => opened.of(id).filter((s) => s.event.action === 'acked').length;
  if (!(await opened.until(() => acked() >= count))) {
    return `${id}: wanted ${count} acked, settled ${actions(opened, id)}`;
  }
  const dead = opened.of(id).some((s) => s.event.action === 'dead-lettered');
  if (dead) return `${id} was dead-lettered: ${actions(opened, id)}`;
  const effects = await opened.effects();
  return effects === 1 ? undefined : `${id} took effect ${effects} times`;
}

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

/** Problems with the facts of the poison clause's dead letter. */
function factsProblem(opened: Opened, event: SettledEvent): string | undefined {
  const facts = event.deadLetter;
  if (facts === undefined) return 'the dead-lettered event carries no deadLetter facts';
  if (facts.reason !== 'MAX_ATTEMPTS') return `reason ${facts.reason}, not MAX_ATTEMPTS`;
  if (facts.attempts < MAX_ATTEMPTS) return `attempts ${facts.attempts}, under ${MAX_ATTEMPTS}`;
  if (facts.consumer !== opened.name) return `consumer ${facts.consumer}, not ${opened.name}`;
  // A transport may consume through its own retry destination named after the original.
  if (!facts.source.startsWith(opened.destination)) {
    return `source ${facts.source}, not ${opened.destination}`;
  }
  return undefined;
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

/** Whether `promise` rejects with a `CONSUMER_STATE` error (by code: it may be another copy of core). */
async function rejectsWithState(promise: Promise<void>): Promise<boolean> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  return (error as { code?: unknown } | undefined)?.code === 'CONSUMER_STATE';
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

const CLAUSES: Readonly<Record<ClauseName, (run: ContractRun) => Promise<string | undefined>>> = {
  duplicate: duplicateClause,
  concurrent: concurrentClause,
  redelivery: redeliveryClause,
  poison: poisonClause,
  badInput: badInputClause,
  extract: extractClause,
  outage: outageClause,
  drain: drainClause,
  lifecycle: lifecycleClause,
};
