/**
 * The machinery the consumer contract's clauses share: options checked, the effects table,
 * one consumer per clause on its own destination, and what it settled. @internal
 */
import { rowsOf } from '../store/rows';
import { sleep } from '../common/time';
import { choiceOption } from '../config/arguments';
import { optionKeys, rejectUnknownOptions } from '../config/options';
import { ConfigurationError } from '../errors';
import { createInbox } from '../inbox/create-inbox';
import type { Handler, HandlerContext, InboxDedupMode, InboxOptions } from '../inbox/types';
import type { Store } from '../store/store';
import type { Consumer, SettledEvent } from '../consumer';

import type {
  ClauseName,
  ConsumerContractOptions,
  ConsumerFeatures,
  ContractConsumerSettings,
  ContractMessage,
} from './consumer-contract-types';

const KEYS = optionKeys<ConsumerContractOptions>()([
  'store',
  'newDestination',
  'send',
  'createConsumer',
  'createPublisher',
  'features',
  'timeoutMs',
  'dedup',
]);
const FEATURE_KEYS = optionKeys<ConsumerFeatures>()([
  'ordersByKey',
  'reportsReceiveCount',
  'batchMode',
  'restart',
  'partition',
]);

const DEDUP_MODES: readonly InboxDedupMode[] = ['ids', 'watermark', 'watermark+ids'];

/** Attempts of the poison clause's inbox: small, so the contract stays short. */
export const MAX_ATTEMPTS = 3;
/** Retry delays of the contract's inboxes: short, so the contract stays short. */
export const BACKOFF = { baseMs: 50, capMs: 200 } as const;
/** Failed tries of the outage clause before its "store" comes back. */
export const OUTAGE_TRIES = 3;
/** A timer's lateness or earliness the redelivery clause tolerates. */
export const TIMER_SLACK_MS = 50;

/** A settled event and when it arrived. */
export interface Seen {
  readonly event: SettledEvent;
  readonly at: number;
}

/** What the clauses share. */
export interface ContractRun {
  readonly options: ConsumerContractOptions;
  readonly features: ConsumerFeatures;
  readonly timeoutMs: number;
  /** The effects table, quoted and qualified. */
  readonly table: string;
  /** A tag that keeps this run's consumer names and ids apart from other runs'. */
  readonly tag: string;
  /** The dedup mode of every inbox the contract creates. */
  readonly dedup: InboxDedupMode;
}

/** One clause's consumer on its own destination, with what it settled. */
export interface Opened {
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
export interface ClauseSetup {
  readonly inbox?: Partial<Omit<InboxOptions, 'store' | 'consumer'>>;
  /** Runs before the effect is written; a throw fails the attempt. */
  readonly before?: (ctx: HandlerContext) => Promise<void> | void;
  readonly messageId?: ContractConsumerSettings['messageId'];
  readonly concurrency?: number;
  readonly resilience?: ContractConsumerSettings['resilience'];
}

/** The test error of the outage clause, which its inbox's `classify` calls infrastructure. */
export class ContractOutageError extends Error {
  constructor() {
    super('the contract simulates an outage of a dependency');
    this.name = 'ContractOutageError';
  }
}

/** Validates the options and creates the effects table. */
export async function prepareRun(options: ConsumerContractOptions): Promise<ContractRun> {
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
  checkFaultFeatures(options);
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
  const dedup = choiceOption(options.dedup, 'dedup', DEDUP_MODES, 'ids');
  return { options, features: options.features ?? {}, timeoutMs, table, tag, dedup };
}

/** The fault features are well formed and come with the publisher their load needs. */
function checkFaultFeatures(options: ConsumerContractOptions): void {
  const { restart, partition } = options.features ?? {};
  if (restart === undefined && partition === undefined) return;
  if (typeof options.createPublisher !== 'function') {
    throw new ConfigurationError(
      'checkConsumerContract needs createPublisher with the restart or partition feature',
    );
  }
  if (
    restart !== undefined &&
    (typeof restart?.stop !== 'function' || typeof restart.start !== 'function')
  ) {
    throw new ConfigurationError('features.restart needs stop and start functions');
  }
  if (
    partition !== undefined &&
    (typeof partition?.cut !== 'function' ||
      typeof partition.heal !== 'function' ||
      !(typeof partition.cutMs === 'number' && partition.cutMs > 0))
  ) {
    throw new ConfigurationError(
      'features.partition needs cut and heal functions and cutMs, a number of milliseconds above 0',
    );
  }
}

/** The body of a delivery as text, whatever its type. */
export function bodyText(body: Uint8Array | string): string {
  return typeof body === 'string' ? body : new TextDecoder().decode(body);
}

/** Core's `sleep`, for the clauses. */
export { sleep };

/** The handler of every clause: the clause's step, then one effect row in `ctx.trx`. */
export function effectHandler(run: ContractRun, name: string, setup: ClauseSetup): Handler {
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
export async function countRows(store: Store, table: string, consumer: string): Promise<number> {
  const result = await store.knex.raw(`select count(*) as n from ${table} where consumer = ?`, [
    consumer,
  ]);
  return Number(rowsOf<{ n: unknown }>(result)[0]?.n ?? 0);
}

/** Opens a clause: its destination, inbox and started consumer. */
export async function open(
  run: ContractRun,
  clause: ClauseName,
  setup: ClauseSetup,
): Promise<Opened> {
  const { store } = run.options;
  const destination = await run.options.newDestination();
  const name = `contract-${run.tag}-${clause}`;
  const inbox = createInbox({
    backoff: BACKOFF,
    dedup: run.dedup,
    ...setup.inbox,
    store,
    consumer: name,
  });
  const seen: Seen[] = [];
  const consumer = run.options.createConsumer(destination, {
    inbox,
    handler: effectHandler(run, name, setup),
    onSettled: (event) => seen.push({ event, at: Date.now() }),
    messageId: setup.messageId ?? { fallback: false },
    ...(setup.concurrency === undefined ? {} : { concurrency: setup.concurrency }),
    ...(setup.resilience === undefined ? {} : { resilience: setup.resilience }),
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
export async function waitUntil(done: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (!done()) {
    if (Date.now() > deadline) return false;
    await sleep(20);
  }
  return true;
}

/** Runs a clause on its own consumer, which is stopped afterwards whatever happened. */
export async function withConsumer(
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
export function actions(opened: Opened, id: string | undefined): string {
  return (
    opened
      .of(id)
      .map((s) => s.event.action)
      .join(', ') || 'nothing'
  );
}

/** `count` copies of one id all end acked, with one effect and no dead letter. */
export async function onceProblem(
  opened: Opened,
  id: string,
  count: number,
): Promise<string | undefined> {
  const acked = (): number => opened.of(id).filter((s) => s.event.action === 'acked').length;
  if (!(await opened.until(() => acked() >= count))) {
    return `${id}: wanted ${count} acked, settled ${actions(opened, id)}`;
  }
  const dead = opened.of(id).some((s) => s.event.action === 'dead-lettered');
  if (dead) return `${id} was dead-lettered: ${actions(opened, id)}`;
  const effects = await opened.effects();
  return effects === 1 ? undefined : `${id} took effect ${effects} times`;
}

/** Problems with the facts of the poison clause's dead letter. */
export function factsProblem(opened: Opened, event: SettledEvent): string | undefined {
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

/** Whether `promise` rejects with a `CONSUMER_STATE` error (by code: it may be another copy of core). */
export async function rejectsWithState(promise: Promise<void>): Promise<boolean> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  return (error as { code?: unknown } | undefined)?.code === 'CONSUMER_STATE';
}

/** Runs `check`, turning a throw into the problem it describes. */
export async function attemptClause(
  check: () => Promise<string | undefined>,
): Promise<string | undefined> {
  try {
    return await check();
  } catch (error) {
    return `threw ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}`;
  }
}
