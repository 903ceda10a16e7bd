/**
 * The load of the consumer contract's fault clauses (restart, partition): events added through
 * the outbox at a steady rate, a relay publishing them through the transport's publisher, the
 * transport's consumer handling them through the inbox into the effects table; then what was
 * lost, doubled, dead or charged, and how long the flow took to resume. The same scenario as
 * the repository's `test-support/restart-load.ts`, on the contract's store. @internal
 */
import { rowsOf } from '../store/rows';
import { createInbox } from '../inbox/create-inbox';
import type { Logger } from '../observability/logger';
import { createOutbox } from '../outbox/create-outbox';
import { createRelay } from '../relay/create-relay';
import type { Relay } from '../relay/types';
import type { Consumer } from '../consumer';
import type { Publisher } from '../transport/publisher';
import {
  BACKOFF,
  countRows,
  effectHandler,
  sleep,
  type ContractRun,
} from './consumer-contract-run';
import type { ClauseName, ContractLogLine } from './consumer-contract-types';

/** Events of one load: enough that the fault lands in the middle of a steady flow. */
export const LOAD_EVENTS = 300;
/** The fault starts this long after the load. */
export const FAULT_AFTER_MS = 3_000;

/** When a message was published or handled (ms since the epoch). */
interface Mark {
  readonly at: number;
  readonly messageId: string;
}

/** A load running against the broker. */
export interface Load {
  readonly destination: string;
  /** The inbox's consumer name; the effects table's `consumer`. */
  readonly name: string;
  readonly published: Mark[];
  readonly handled: Mark[];
  readonly logs: {
    readonly consumer: ContractLogLine[];
    readonly publisher: ContractLogLine[];
    readonly relay: ContractLogLine[];
  };
  /** Adds `LOAD_EVENTS` events over `spanMs`; resolves with their message ids. */
  feed(spanMs: number): Promise<string[]>;
  /** Stops the relay, the publisher and the consumer. */
  close(): Promise<void>;
}

/** What the load's checks found. */
export interface LoadOutcome {
  readonly events: number;
  readonly handled: number;
  /** Events never handled. */
  readonly lost: number;
  readonly missing: readonly string[];
  /** Events handled (committed) more than once. */
  readonly doubled: number;
  /** Events the relay gave up on. */
  readonly dead: number;
  /** Dead letters of the load's consumer. */
  readonly deadLetters: number;
  /** The most publish attempts charged to one event: an outage is never an event's fault. */
  readonly charged: number;
  /** The last error of the most charged event, so a charge names what the publisher said. */
  readonly chargedError: string | null;
}

function recordingLogger(lines: ContractLogLine[]): Logger {
  const note =
    (level: ContractLogLine['level']) =>
    (message: string, fields: Readonly<Record<string, unknown>> = {}) =>
      void lines.push({ at: Date.now(), level, message, fields });
  return { debug: () => undefined, info: note('info'), warn: note('warn'), error: note('error') };
}

function timedPublisher(inner: Publisher, published: Mark[]): Publisher {
  return {
    async publish(messages) {
      const results = await inner.publish(messages);
      const at = Date.now();
      for (const result of results)
        if (result.ok) published.push({ at, messageId: result.messageId });
      return results;
    },
    close: () => inner.close(),
  };
}

/** Starts the consumer, then the relay, on a fresh destination of `clause`. */
export async function startLoad(run: ContractRun, clause: ClauseName): Promise<Load> {
  const { store, createPublisher } = run.options;
  if (createPublisher === undefined) throw new Error('createPublisher is needed');
  const destination = await run.options.newDestination();
  const name = `contract-${run.tag}-${clause}`;
  const published: Mark[] = [];
  const handled: Mark[] = [];
  const logs = { consumer: [], publisher: [], relay: [] } as Load['logs'];
  const write = effectHandler(run, name, {});
  const consumer: Consumer = run.options.createConsumer(destination, {
    inbox: createInbox({ backoff: BACKOFF, dedup: run.dedup, store, consumer: name }),
    handler: async (ctx) => {
      handled.push({ at: Date.now(), messageId: ctx.messageId });
      await write(ctx);
    },
    onSettled: () => undefined,
    messageId: { fallback: false },
    logger: recordingLogger(logs.consumer),
  });
  await consumer.start();
  const publisher = createPublisher(recordingLogger(logs.publisher));
  let relay: Relay | undefined;
  try {
    relay = createRelay({
      store,
      publisher: timedPublisher(publisher, published),
      onPublished: 'keep',
      pollIntervalMs: 200,
      logger: recordingLogger(logs.relay),
    });
    await relay.start();
  } catch (error) {
    await Promise.allSettled([consumer.stop({ timeoutMs: 2_000 }), publisher.close()]);
    throw error;
  }
  const started = relay;
  return {
    destination,
    name,
    published,
    handled,
    logs,
    feed: (spanMs) => feed(run, destination, spanMs),
    close: async () => {
      await started.stop().catch(() => undefined);
      await publisher.close().catch(() => undefined);
      await consumer.stop({ timeoutMs: 5_000 }).catch(() => undefined);
    },
  };
}

/** Adds the load's events to `destination`, one transaction each, spread over `spanMs`. */
async function feed(run: ContractRun, destination: string, spanMs: number): Promise<string[]> {
  const { store } = run.options;
  const outbox = createOutbox({ store });
  const ids: string[] = [];
  const started = Date.now();
  for (let n = 0; n < LOAD_EVENTS; n++) {
    const due = started + (n * spanMs) / LOAD_EVENTS;
    if (due > Date.now()) await sleep(due - Date.now());
    const [id] = await store.knex.transaction((trx) =>
      outbox.add(trx, { destination, key: `k${n % 8}`, payload: { n } }),
    );
    if (id !== undefined) ids.push(id);
  }
  return ids;
}

async function rows<T>(run: ContractRun, sql: string, bindings: unknown[]): Promise<T[]> {
  const result = await run.options.store.knex.raw(sql, bindings as never);
  return rowsOf<T>(result);
}

/**
 * Waits until every event was handled, or until nothing was left to publish and nothing new was
 * handled for a while (events the broker lost never come), at most `timeoutMs`; then, after a
 * moment for late duplicates, counts.
 */
export async function settle(
  run: ContractRun,
  load: Load,
  ids: readonly string[],
  timeoutMs: number,
): Promise<LoadOutcome> {
  const outbox = run.options.store.names.table('outbox');
  const distinct = async (): Promise<number> =>
    Number(
      (
        await rows<{ n: unknown }>(
          run,
          `select count(distinct message_id) as n from ${run.table} where consumer = ?`,
          [load.name],
        )
      )[0]?.n ?? 0,
    );
  const pending = async (): Promise<number> =>
    Number(
      (
        await rows<{ n: unknown }>(
          run,
          `select count(*) as n from ${outbox} where destination = ? and status = 'pending'`,
          [load.destination],
        )
      )[0]?.n ?? 0,
    );
  let last = -1;
  let since = Date.now();
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const now = await distinct();
    if (now >= ids.length) break;
    if (now !== last) [last, since] = [now, Date.now()];
    if (Date.now() - since > 8_000 && (await pending()) === 0) break;
    await sleep(250);
  }
  await sleep(1_500);
  const counts = await rows<{ message_id: string; n: unknown }>(
    run,
    `select message_id, count(*) as n from ${run.table} where consumer = ? group by message_id`,
    [load.name],
  );
  const outboxRows = await rows<{ dead: unknown; charged: unknown; error: string | null }>(
    run,
    `select count(*) filter (where status = 'dead') as dead, coalesce(max(attempts), 0) as charged,
            (array_agg(last_error order by attempts desc))[1] as error
       from ${outbox} where destination = ?`,
    [load.destination],
  );
  const seen = new Set(counts.map((row) => row.message_id));
  const missing = ids.filter((id) => !seen.has(id));
  return {
    events: ids.length,
    handled: counts.reduce((sum, row) => sum + Number(row.n), 0),
    lost: missing.length,
    missing,
    doubled: counts.filter((row) => Number(row.n) > 1).length,
    dead: Number(outboxRows[0]?.dead ?? 0),
    deadLetters: await countRows(
      run.options.store,
      run.options.store.names.table('dead_letters'),
      load.name,
    ),
    charged: Number(outboxRows[0]?.charged ?? 0),
    chargedError: outboxRows[0]?.error ?? null,
  };
}

/** Milliseconds from `since` to the first publish and the first handling at or after it. */
export function recoveryAfter(
  load: Load,
  since: number,
): { firstPublishMs: number | null; firstHandledMs: number | null } {
  const first = (marks: readonly Mark[]): number | null => {
    const after = marks.map((m) => m.at).filter((at) => at >= since);
    return after.length > 0 ? Math.min(...after) - since : null;
  };
  return { firstPublishMs: first(load.published), firstHandledMs: first(load.handled) };
}

/** Problems with a recovery: the flow must resume, both ways, within `boundMs`. */
export function recoveryProblem(
  recovery: ReturnType<typeof recoveryAfter>,
  boundMs: number,
): string | undefined {
  const { firstPublishMs, firstHandledMs } = recovery;
  if (firstPublishMs === null) return 'nothing was published after the broker came back';
  if (firstHandledMs === null) return 'nothing was handled after the broker came back';
  if (firstPublishMs >= boundMs)
    return `the first publish came after ${firstPublishMs} ms, not within ${boundMs}`;
  if (firstHandledMs >= boundMs)
    return `the first handling came after ${firstHandledMs} ms, not within ${boundMs}`;
  return undefined;
}

/** Problems of an outcome other than lost events: doubles, dead events, charges, dead letters. */
export function outcomeProblem(outcome: LoadOutcome): string | undefined {
  if (outcome.doubled > 0) return `${outcome.doubled} events took effect twice`;
  if (outcome.dead > 0) return `the relay gave up on ${outcome.dead} events`;
  if (outcome.deadLetters > 0) return `${outcome.deadLetters} dead letters`;
  if (outcome.charged > 0)
    return `an event was charged ${outcome.charged} publish attempts for the outage (${outcome.chargedError ?? 'no error kept'})`;
  return undefined;
}
