/**
 * Calls made at the same time share their statements: the reservations of concurrent calls
 * go as one upsert over arrays, their final states as one update. These tests make calls of
 * every kind at once, so that they land in the same grouped statements, and check that each
 * call ends as it would alone.
 */
import type { Knex } from 'knex';
import {
  createOperations,
  isOperationConflictError,
  isOperationFailedError,
  type OperationContext,
  type Operations,
} from '../src';
import { ALL_STORE_KINDS, openTestStore } from './db';
import { DeclinedError, TransientError } from './fixtures/operations-support';
import { rejection } from './fixtures/gate';
import { watchStatements } from './fixtures/statements';

type TestStore = Awaited<ReturnType<typeof openTestStore>>;

/** Counts the grouped reservations and final updates `knex` sends from now on. */
function countGrouped(knex: Knex): { reserves: number; finals: number; stop(): void } {
  const counts = { reserves: 0, finals: 0 };
  const stop = watchStatements(knex, (sql) => {
    // MySQL's: a multi-row upsert, and an update that sets each row's status by its owner.
    if (/^\s*insert into \S+idempotency`[^]*\),\s*\(\?/.test(sql)) counts.reserves += 1;
    if (/^\s*update \S+idempotency`\s+set status = case owner_id/.test(sql)) counts.finals += 1;
    if (!sql.includes('unnest(')) return;
    if (/^\s*insert into \S+idempotency" as t/.test(sql)) counts.reserves += 1;
    if (/^\s*update \S+idempotency" as t/.test(sql)) counts.finals += 1;
  });
  return Object.assign(counts, { stop });
}

describe.each(ALL_STORE_KINDS)('operations called at the same time on %s', (kind) => {
  let store: TestStore;
  let sequence = 0;
  const operations = (): Operations =>
    createOperations({
      store,
      operation: `grouped-${(sequence += 1)}`,
      waitForInProgressMs: 5_000,
    });

  beforeAll(async () => {
    store = await openTestStore(kind, { pool: { max: 8 } });
  });
  afterAll(async () => {
    await store.dispose();
  });

  it('runs each of 200 concurrent calls on new keys once, in grouped statements', async () => {
    const ops = operations();
    const runs = new Map<string, number>();
    const effect = async (ctx: OperationContext) => {
      runs.set(ctx.key, (runs.get(ctx.key) ?? 0) + 1);
      return { paid: ctx.key, attempt: ctx.attempt };
    };
    const keys = Array.from({ length: 200 }, (_, i) => `order-${i}`);
    const grouped = countGrouped(store.knex);
    const results = await Promise.all(keys.map((key) => ops.run(key, { key }, effect)));
    grouped.stop();
    expect(results).toEqual(keys.map((key) => ({ paid: key, attempt: 1 })));
    expect([...runs.values()].every((n) => n === 1)).toBe(true);
    expect(runs.size).toBe(200);
    expect(grouped.reserves).toBeGreaterThan(0);
    expect(grouped.finals).toBeGreaterThan(0);
    for (const key of ['order-0', 'order-99', 'order-199']) {
      expect(await ops.get(key)).toMatchObject({
        status: 'SUCCEEDED',
        attempts: 1,
        response: { paid: key, attempt: 1 },
      });
    }
  });

  it('ends replays, conflicts, retries, final failures and duplicates as each would alone', async () => {
    const ops = operations();
    await ops.run('done', { n: 1 }, async () => 'first answer');
    await rejection(ops.run('flaky', { n: 1 }, () => Promise.reject(new TransientError('busy'))));
    await rejection(ops.run('declined', { n: 1 }, () => Promise.reject(new DeclinedError('no'))));
    let effects = 0;
    const effect = async (ctx: OperationContext) => {
      effects += 1;
      if (ctx.key.startsWith('fails-')) throw new TransientError(`down for ${ctx.key}`);
      return `ran ${ctx.key} on attempt ${ctx.attempt}`;
    };
    const grouped = countGrouped(store.knex);
    const calls = {
      replay: ops.run('done', { n: 1 }, effect),
      conflict: rejection(ops.run('done', { n: 2 }, effect)),
      retried: ops.run('flaky', { n: 1 }, effect),
      final: rejection(ops.run('declined', { n: 1 }, effect)),
      duplicates: Promise.all(Array.from({ length: 6 }, () => ops.run('dup', { n: 1 }, effect))),
      fresh: Promise.all(Array.from({ length: 30 }, (_, i) => ops.run(`new-${i}`, i, effect))),
      failing: Promise.all(
        Array.from({ length: 10 }, (_, i) => rejection(ops.run(`fails-${i}`, i, effect))),
      ),
    };
    const settled = {
      replay: await calls.replay,
      conflict: await calls.conflict,
      retried: await calls.retried,
      final: await calls.final,
      duplicates: await calls.duplicates,
      fresh: await calls.fresh,
      failing: await calls.failing,
    };
    grouped.stop();
    expect(settled.replay).toBe('first answer');
    expect(isOperationConflictError(settled.conflict)).toBe(true);
    expect(settled.retried).toBe('ran flaky on attempt 2');
    expect(isOperationFailedError(settled.final)).toBe(true);
    expect(settled.duplicates).toEqual(Array.from({ length: 6 }, () => 'ran dup on attempt 1'));
    expect(settled.fresh).toEqual(
      Array.from({ length: 30 }, (_, i) => `ran new-${i} on attempt 1`),
    );
    expect(settled.failing.every((e) => e instanceof TransientError)).toBe(true);
    // flaky, dup once, 30 fresh, 10 failing: the replay, conflict and final failure ran nothing.
    expect(effects).toBe(42);
    expect(grouped.reserves + grouped.finals).toBeGreaterThan(0);
    expect(await ops.get('fails-3')).toMatchObject({
      status: 'FAILED_RETRIABLE',
      error: { name: 'TransientError', message: 'down for fails-3' },
    });
    expect(await ops.get('dup')).toMatchObject({ status: 'SUCCEEDED', attempts: 1 });
    expect(await ops.get('flaky')).toMatchObject({ status: 'SUCCEEDED', attempts: 2 });
  });
});
