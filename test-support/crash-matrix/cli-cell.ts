/**
 * The `cli` scenario of the crash-point matrix: dead letters (each message's handler failed
 * on its only attempt, so none has an effect) are requeued by `justonce dead-letters requeue`,
 * which dies between two letters (as often as the size asks) and is run again, as an
 * operator would. Then the crash child of `crash-child.ts`, without a crash point, relays the
 * requeued letters to RabbitMQ and consumes them (and a second copy of each, published
 * straight to the queue) until each has an effect.
 */
import { randomBytes } from 'node:crypto';
import { rowsOf, type Store } from '@justonce/core';
import { databaseUrl } from '../../packages/core/test/db';
import { cli } from '../../packages/cli/test/cli-process';
import { deadLetters } from '../../packages/cli/test/seed';
import { spawnCrashChild, type CrashChild, type CrashReport } from '../crash-child';
import { openEffectsStore } from '../effects';
import { unpublished } from './broker-cell';
import { BATCH_SIZE, type Brokers, type Route } from './brokers';
import type { MatrixCell } from './cells';
import { crashEnv, killedOrDone, lostAndDoubled, type CellCounts, type CellSize } from './cell-run';

/** The exit code of a program killed by SIGKILL (9), as a shell or tsx reports it. */
const KILLED_EXIT_CODE = 128 + 9;

/** Letters of `consumer` not requeued yet. */
async function waiting(store: Store, consumer: string): Promise<number> {
  const result = await store.knex.raw(
    `select count(*)::int as n from ${store.names.table('dead_letters')}
     where consumer = ? and requeued_at is null`,
    [consumer],
  );
  return Number(rowsOf<{ n: number }>(result)[0]?.n ?? 0);
}

/** Runs the `cli` cell; resolves to what it counted. */
export async function runCliCell(
  cell: MatrixCell,
  size: CellSize,
  brokers: Brokers,
): Promise<CellCounts> {
  const store = await openEffectsStore();
  let opened: Route | undefined;
  let survivor: CrashChild | undefined;
  try {
    const route = await brokers.open('rabbitmq');
    opened = route;
    const consumer = `c-${randomBytes(4).toString('hex')}`;
    const ids = Array.from({ length: size.messages }, (_, i) => `${consumer}-${i}`);
    await deadLetters(store, consumer, ids);
    const requeue = [
      ...['--schema', store.schema, 'dead-letters', 'requeue'],
      ...['--consumer', consumer, '--to', route.destination, '--yes'],
    ];
    let kills = 0;
    for (let k = 0; k < size.kills; k += 1) {
      const run = await cli(requeue, crashEnv(cell));
      // tsx's CLI runs the program in a process of its own and exits with 128 + the signal
      // that killed it. Any other end: there was nothing left to die on.
      if (run.code !== KILLED_EXIT_CODE && run.code !== null) break;
      kills += 1;
    }
    const left = await waiting(store, consumer);
    if (left > 0) {
      const run = await cli(requeue);
      if (run.code !== 0) throw new Error(`requeue failed (${run.code}): ${run.stderr}`);
    }

    // The duplicate: the broker delivers each requeued message once more.
    await route.publish(ids);
    survivor = spawnCrashChild({
      databaseUrl: databaseUrl(),
      schema: store.schema,
      consumer,
      transport: route.transport(consumer, 'message'),
      relay: { destination: route.destination, batchSize: BATCH_SIZE },
    });
    const onReport = (report: CrashReport): void => {
      if (report.type === 'settled' && report.action === 'acked' && report.messageId) {
        route.acked(report.messageId);
      }
    };
    const done = async () =>
      (await store.effectCounts(consumer)).size === ids.length &&
      (await unpublished(store)) === 0 &&
      (await route.drained());
    if ((await killedOrDone(survivor, done, onReport)) === 'killed') {
      throw new Error(`the survivor died though it was not told to: ${survivor.stderr()}`);
    }
    return { kills, ...lostAndDoubled(await store.effectCounts(consumer), ids) };
  } finally {
    await survivor?.kill();
    await opened?.dispose();
    await store.dispose();
  }
}
