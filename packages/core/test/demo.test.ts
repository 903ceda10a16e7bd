import { createStore, rowsOf } from '../src';
import { CRASH_POINTS } from '../src/testing';
import { runDemo, type DemoProgress } from '../../../examples/payments-demo/run';
import { formatTable } from '../../../examples/payments-demo/table';
import { databaseUrl } from './db';

/** The payments demo (`pnpm demo`) on a small N: its invariants must hold on both stores. */
describe('payments demo', () => {
  it('on PGlite: one effect per message despite every injected fault', async () => {
    const progress: DemoProgress[] = [];
    const result = await runDemo({ messages: 60, seed: 5, onProgress: (p) => progress.push(p) });

    expect(result.database).toBe('pglite');
    expect(result.checks.filter((c) => !c.ok)).toEqual([]);
    expect(result.ok).toBe(true);
    expect(result.effectsCommitted).toBe(59);
    expect(result.messagesCharged).toBe(59);
    expect(result.deadLetters).toBe(1);
    expect(result.deadLettersInStore).toBe(1);
    expect(result.duplicatesInjected).toBe(12);
    expect(result.duplicatesSuppressed).toBeGreaterThanOrEqual(result.duplicatesInjected);
    expect(result.concurrentInjected).toBe(3);
    for (const point of CRASH_POINTS) expect(result.crashes[point]).toBe(2);
    expect(result.retries).toBeGreaterThan(0);
    expect(result.delivered).toBeGreaterThan(60 + result.duplicatesInjected);

    expect(progress.at(-1)).toMatchObject({ done: 60, total: 60 });
    const table = formatTable(result);
    expect(table).toMatch(/effects committed\s+│\s+59 │/);
    expect(table).toContain('OK: every message took effect exactly once.');
  });

  it('on PostgreSQL when given a URL, and cleans up its schema', async () => {
    const admin = await createStore({ connectionString: databaseUrl() });
    const demoSchemas = async (): Promise<string[]> =>
      rowsOf<{ schema_name: string }>(
        await admin.knex.raw(
          `select schema_name from information_schema.schemata where schema_name like 'payments_demo_%'`,
        ),
      ).map((r) => r.schema_name);
    try {
      const before = await demoSchemas();
      const result = await runDemo({ messages: 40, seed: 9, databaseUrl: databaseUrl() });
      expect(result.database).toBe('postgres');
      expect(result.checks.filter((c) => !c.ok)).toEqual([]);
      expect(result.effectsCommitted).toBe(39);
      expect(await demoSchemas()).toEqual(before);
    } finally {
      await admin.close();
    }
  });

  it('the table marks a broken invariant and says FAILED', () => {
    const crashes = Object.fromEntries(CRASH_POINTS.map((p) => [p, 1])) as Record<
      (typeof CRASH_POINTS)[number],
      number
    >;
    const table = formatTable({
      database: 'pglite',
      uniqueMessages: 10,
      delivered: 12,
      duplicatesInjected: 2,
      concurrentInjected: 0,
      duplicatesSuppressed: 1,
      crashes,
      retries: 0,
      effectsCommitted: 10,
      messagesCharged: 9,
      deadLetters: 1,
      deadLettersInStore: 1,
      elapsedMs: 1234,
      setupMs: 10,
      checks: [
        { name: 'effects committed (10) == unique messages (10) - dead letters (1)', ok: false },
        { name: 'nothing left in flight or queued', ok: true },
      ],
      ok: false,
    });
    expect(table).toContain('✗ effects committed (10)');
    expect(table).toContain('✓ nothing left in flight or queued');
    expect(table).toContain('FAILED');
    expect(table).toMatch(/elapsed\s+│\s+1\.23 s │/);
  });

  it('rejects a nonsensical message count', async () => {
    await expect(runDemo({ messages: 0 })).rejects.toMatchObject({ code: 'INVALID_CONFIG' });
  });
});
