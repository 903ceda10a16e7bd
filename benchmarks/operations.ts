/**
 * `pnpm bench operations`: `operations.run` on real PostgreSQL against the same two
 * statements written by hand (the reserving upsert, then the update to SUCCEEDED with the
 * response), each call its own pair, in the same process and the same run.
 *
 * Cases: N callers at once (32, as the order service's HTTP load; 4, as a consumer with four
 * partitions), each taking the next key of a shared list, every key new. The library groups
 * the reservations and the final updates that callers make at the same time into one
 * statement each; the hand-written side sends one statement per call, as a service would
 * without it. Both sides use a pool of 20 connections.
 *
 * Each case: a warm-up round, then BENCH_ROUNDS rounds (default 6) alternating which side
 * runs first, on fresh keys. `perSec` and `baselinePerSec` are medians over the rounds;
 * `ratio` is the median of the per-round ratios; each side's cost per call (_support.ts,
 * costMeter: this process's CPU, PostgreSQL's CPU, statements sent) is the median over the
 * rounds. The last line printed is the JSON result.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import createKnex, { type Knex } from 'knex';
import { createOperations, createStore, type Operations } from '@justonce/core';
import {
  benchRounds,
  costMeter,
  measureCases,
  printCostTable,
  timedWorkers,
  type Case,
  type Run,
} from './_support';

const CALLS = 4_000;
const POOL = 20;

/** The hand-written pair of statements of one call: reserve, then succeed. */
async function handRun(db: Knex, table: string, key: string, request: unknown): Promise<void> {
  const owner = randomUUID();
  const reserved = await db.raw(
    `insert into ${table} as t
       (scope, operation, key, request_hash, status, owner_id, lease_until, attempts, expires_at)
     values ('', 'bench', ?, ?, 'IN_PROGRESS', ?, now() + interval '3 seconds', 1,
             now() + interval '1 day')
     on conflict (scope, operation, key) do update set
       owner_id = excluded.owner_id, status = 'IN_PROGRESS', attempts = t.attempts + 1
     where t.status = 'FAILED_RETRIABLE'
     returning t.attempts`,
    [key, JSON.stringify(request), owner],
  );
  if ((reserved as { rows: unknown[] }).rows.length !== 1) throw new Error(`${key} not reserved`);
  await db.raw(
    `update ${table} set status = 'SUCCEEDED', response = ?::json, lease_until = null
      where scope = '' and operation = 'bench' and key = ? and owner_id = ?
        and status = 'IN_PROGRESS'`,
    [JSON.stringify({ ok: key }), key, owner],
  );
}

/**
 * One side of a case: CALLS calls on fresh keys, `callers` at a time; resolves to calls/s and
 * what a call cost.
 */
function side(callers: number, call: (key: string) => Promise<void>): () => Promise<Run> {
  return async () => {
    const tag = randomBytes(4).toString('hex');
    const keys = Array.from({ length: CALLS }, (_, i) => `${tag}-${i}`);
    const meter = costMeter();
    const seconds = await timedWorkers(keys, callers, call);
    return { perSec: CALLS / seconds, ...meter(CALLS) };
  };
}

function cases(ops: Operations, db: Knex, table: string): Case[] {
  const framework = (key: string): Promise<void> =>
    ops.run(key, { key }, () => Promise.resolve({ ok: key })).then(() => undefined);
  const hand = (key: string): Promise<void> => handRun(db, table, key, { key });
  return [32, 4].map((callers): Case => [
    `run, ${callers} callers at once`,
    side(callers, framework),
    side(callers, hand),
  ]);
}

/** Runs the benchmark and prints its JSON line last. */
export async function main(): Promise<void> {
  const url = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
  const schema = `bench_operations_${randomBytes(4).toString('hex')}`;
  const store = await createStore({ connectionString: url, schema, pool: { max: POOL } });
  const db = createKnex({ client: 'pg', connection: url, pool: { min: 0, max: POOL } });
  try {
    await store.migrate();
    const ops = createOperations({ store, operation: 'bench', leaseMs: 3_000 });
    const table = store.names.table('idempotency');
    const results = await measureCases(benchRounds(), cases(ops, db, table), () => true);
    printCostTable(results, 'call');
    console.log(JSON.stringify({ bench: 'operations', results }));
  } finally {
    await store.knex.raw(`drop schema if exists "${schema}" cascade`);
    await store.close();
    await db.destroy();
  }
}
