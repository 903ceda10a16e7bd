/**
 * The `consumer` and `relay` scenarios of the crash-point matrix, on a real broker (or the
 * parent-held memory one): the crash child of `crash-child.ts` consumes (and, for `relay`,
 * relays) with `JUSTONCE_CRASH_AT` set until it dies at the point, as often as the size
 * asks; then a child without it runs until every message has an effect and the broker is
 * drained; then the effects are counted per message.
 *
 * Duplicates are injected: a `consumer` cell publishes every message twice; a `relay` cell
 * adds each to the outbox and publishes a copy of it straight to the broker. The kill adds
 * the broker's redeliveries (and the relay's re-publishes) to those.
 */
import { randomBytes } from 'node:crypto';
import { createOutbox, rowsOf, type Store } from '@justonce/core';
import { databaseUrl } from '../../packages/core/test/db';
import { spawnCrashChild, type CrashChild, type CrashJob, type CrashReport } from '../crash-child';
import { openEffectsStore, type EffectsStore } from '../effects';
import { BATCH_SIZE, type Brokers, type Route } from './brokers';
import type { BrokerTransport, MatrixCell } from './cells';
import { crashEnv, killedOrDone, lostAndDoubled, type CellCounts, type CellSize } from './cell-run';

/** Outbox rows not published yet. */
export async function unpublished(store: Store): Promise<number> {
  const result = await store.knex.raw(
    `select count(*)::int as n from ${store.names.table('outbox')} where status <> 'published'`,
  );
  return Number(rowsOf<{ n: number }>(result)[0]?.n ?? 0);
}

/** Adds one outbox event per id (its id as the message id) in one transaction. */
async function addToOutbox(store: Store, destination: string, ids: readonly string[]) {
  const outbox = createOutbox({ store });
  await store.knex.transaction((trx) =>
    outbox.add(
      trx,
      ids.map((id) => ({ destination, key: id, payload: { id }, messageId: id })),
    ),
  );
}

/** The `ctx.once` step of a `once.after-effect` cell, and its ledger's lease and wait. */
const ONCE = { step: 'charge', leaseMs: 1_000, waitMs: 5_000 } as const;

/**
 * Effects per message of a `once.after-effect` cell, where each message has two: the remote
 * call made through `ctx.once` and the business write. The remote call is counted by its
 * distinct idempotency keys, as the remote system would: a call made again with the step's
 * one key after a kill before its record is the window the key exists for, not a double.
 * A message counts once only when it has both, and twice when either happened twice.
 */
async function onceEffectCounts(
  store: EffectsStore,
  consumer: string,
): Promise<Map<string, number>> {
  const result = await store.knex.raw(
    `select message_id,
            count(*) filter (where note is distinct from 'remote')::int as business,
            count(distinct key) filter (where note = 'remote')::int as keys
       from ${store.effectsTable} where consumer = ? group by message_id`,
    [consumer],
  );
  const counts = new Map<string, number>();
  for (const row of rowsOf<{ message_id: string; business: number; keys: number }>(result)) {
    if (row.business > 0 && row.keys > 0) {
      counts.set(row.message_id, Math.max(row.business, row.keys));
    }
  }
  return counts;
}

/** Splits `ids` into `parts` runs of about the same size (the last ones may be empty). */
function portions(ids: readonly string[], parts: number): string[][] {
  const size = Math.ceil(ids.length / parts);
  return Array.from({ length: parts }, (_, i) => ids.slice(i * size, (i + 1) * size));
}

/** Runs a `consumer` or `relay` cell; resolves to what it counted. */
export async function runBrokerCell(
  cell: MatrixCell,
  size: CellSize,
  brokers: Brokers,
): Promise<CellCounts> {
  const store = await openEffectsStore();
  try {
    const route = await brokers.open(cell.transport as BrokerTransport);
    try {
      return await runOn(cell, size, store, route);
    } finally {
      await route.dispose();
    }
  } finally {
    await store.dispose();
  }
}

/** The cell's run on its own schema and topic or queue. */
async function runOn(
  cell: MatrixCell,
  size: CellSize,
  store: EffectsStore,
  route: Route,
): Promise<CellCounts> {
  const consumer = `c-${randomBytes(4).toString('hex')}`;
  const ids = Array.from({ length: size.messages }, (_, i) => `${consumer}-${i}`);
  const relayed = cell.scenario === 'relay';
  const once = cell.point === 'once.after-effect';
  const effectCounts = () =>
    once ? onceEffectCounts(store, consumer) : store.effectCounts(consumer);
  const job = (): CrashJob => ({
    databaseUrl: databaseUrl(),
    schema: store.schema,
    consumer,
    transport: route.transport(consumer, cell.mode),
    ...(relayed ? { relay: { destination: route.destination, batchSize: BATCH_SIZE } } : {}),
    ...(once ? { once: ONCE } : {}),
  });
  const children: CrashChild[] = [];
  const spawn = (env?: Record<string, string>): CrashChild => {
    const child = spawnCrashChild(job(), env);
    children.push(child);
    return child;
  };
  try {
    const onReport = (report: CrashReport): void => {
      if (report.type === 'settled' && report.action === 'acked' && report.messageId) {
        route.acked(report.messageId);
      }
    };
    const done = async (): Promise<boolean> =>
      (await effectCounts()).size === ids.length &&
      (!relayed || (await unpublished(store)) === 0) &&
      (await route.drained());

    if (!relayed) {
      await route.publish(ids);
      await route.publish(ids);
    }
    // A relay cell adds a portion of the messages for each crash child once it listens, so
    // that each has new work (and a NOTIFY) to die on; the last portion goes to the survivor.
    // A child that dies at its point before it listens (claiming what an earlier one left)
    // passes its portion on to the next.
    const parts = relayed ? portions(ids, size.kills + 1) : [];
    let fed = 0;
    const feed = async (child: CrashChild, upTo: number) => {
      if (fed > upTo || fed >= parts.length) return;
      const listening = await child.next('started').then(
        () => true,
        () => false,
      );
      for (; listening && fed <= upTo && fed < parts.length; fed += 1) {
        await addToOutbox(store, route.destination, parts[fed]!);
        await route.publish(parts[fed]!);
      }
    };

    let kills = 0;
    for (let k = 0; k < size.kills; k += 1) {
      const child = spawn(crashEnv(cell));
      await feed(child, k);
      if ((await killedOrDone(child, done, onReport)) === 'done') break;
      kills += 1;
    }
    const survivor = spawn();
    await feed(survivor, size.kills);
    if ((await killedOrDone(survivor, done, onReport)) === 'killed') {
      throw new Error(`the survivor died though it was not told to: ${survivor.stderr()}`);
    }
    return { kills, ...lostAndDoubled(await effectCounts(), ids) };
  } finally {
    await Promise.all(children.map((child) => child.kill()));
  }
}
