import { createStore, rowsOf } from '../src';
import { CRASH_POINTS } from '../src/testing';
import { runDemo } from '../../../examples/order-service/demo/run';
import { flowChecks, type FlowReport } from '../../../examples/order-service/report/checks';
import { formatReport } from '../../../examples/order-service/report/table';
import type { FlowProgress } from '../../../examples/order-service/report/progress';
import { databaseUrl, mysqlUrl } from './db';

/**
 * The demo (`pnpm demo`: the order-service flow in one process) on a small N: its invariants
 * must hold on every store (PGlite, PostgreSQL, MariaDB), with every kind of fault injected.
 */
describe('order-service demo', () => {
  it('on PGlite: every order created, charged and shipped once despite every injected fault', async () => {
    const progress: FlowProgress[] = [];
    const report = await runDemo({ orders: 200, seed: 5, onProgress: (p) => progress.push(p) });

    expect(report.database).toBe('pglite');
    expect(report.checks.filter((c) => !c.ok)).toEqual([]);
    expect(report.ok).toBe(true);
    for (const ledger of Object.values(report.outcome.ledgers)) {
      expect(ledger).toEqual({ rows: 200, doubles: 0, lost: 0, unknown: 0 });
    }
    // Every kind of fault was thrown at it.
    expect(report.injected.duplicates).toBeGreaterThan(0);
    expect(report.injected.concurrent).toBeGreaterThan(0);
    expect(CRASH_POINTS.reduce((sum, p) => sum + report.injected.crashes[p], 0)).toBeGreaterThan(0);
    expect(report.injected.charged + report.injected.recorded).toBeGreaterThan(0);
    expect(report.load.duplicateRequests).toBeGreaterThan(0);
    expect(report.load.stats.replayed).toBeGreaterThan(0);
    expect(report.outcome.provider.unavailable + report.outcome.provider.slow).toBeGreaterThan(0);

    expect(progress.at(-1)).toMatchObject({ accepted: 200, shipped: 200, total: 200 });
    const table = formatReport(report);
    expect(table).toMatch(/shipments\s+│\s+200 │\s+0 │\s+0 │/);
    expect(table).toContain('OK: every order was created, charged and shipped exactly once.');
  }, 180_000);

  it('on PostgreSQL when given a URL, and drops its schemas', async () => {
    const admin = await createStore({ connectionString: databaseUrl() });
    const demoSchemas = async (): Promise<string[]> =>
      rowsOf<{ schema_name: string }>(
        await admin.knex.raw(
          `select schema_name from information_schema.schemata where schema_name like 'demo\\_%'`,
        ),
      ).map((r) => r.schema_name);
    try {
      const before = await demoSchemas();
      const report = await runDemo({ orders: 60, seed: 9, databaseUrl: databaseUrl() });
      expect(report.database).toBe('postgres');
      expect(report.checks.filter((c) => !c.ok)).toEqual([]);
      expect(report.outcome.ledgers.shipments.rows).toBe(60);
      expect(await demoSchemas()).toEqual(before);
    } finally {
      await admin.close();
    }
  }, 120_000);

  it('on MariaDB when given a mysql:// URL, and drops its databases', async () => {
    const admin = await createStore({ connectionString: mysqlUrl() });
    const demoDatabases = async (): Promise<string[]> =>
      rowsOf<{ name: string }>(
        await admin.knex.raw(
          `select schema_name as name from information_schema.schemata
            where schema_name like 'demo\\_%'`,
        ),
      ).map((r) => r.name);
    try {
      const before = await demoDatabases();
      const report = await runDemo({ orders: 60, seed: 9, databaseUrl: mysqlUrl() });
      expect(report.database).toBe('mysql');
      expect(report.checks.filter((c) => !c.ok)).toEqual([]);
      for (const ledger of Object.values(report.outcome.ledgers)) {
        expect(ledger).toEqual({ rows: 60, doubles: 0, lost: 0, unknown: 0 });
      }
      // Shipments are timed on the database's clock: a latency in hours would mean a zone slip.
      expect(report.outcome.latency.p99Ms).toBeGreaterThan(0);
      expect(report.outcome.latency.p99Ms).toBeLessThan(60_000);
      expect(await demoDatabases()).toEqual(before);
    } finally {
      await admin.close();
    }
  }, 120_000);

  it('the table marks a broken invariant and says FAILED', () => {
    const tally = { rows: 10, doubles: 0, lost: 0, unknown: 0 };
    const load: FlowReport['load'] = {
      accepted: Array.from({ length: 10 }, (_, i) => ({
        key: `k${i}`,
        orderId: `o${i}`,
        sentAt: 0,
      })),
      stats: {
        requests: 12,
        retries: 2,
        replayed: 1,
        inProgress: 0,
        serverErrors: 1,
        timeouts: 1,
        connectionErrors: 0,
        conflicts: 0,
      },
      duplicateRequests: 1,
      mismatches: 0,
      conflictsAccepted: 0,
      failures: [],
      elapsedMs: 1000,
    };
    const outcome: FlowReport['outcome'] = {
      ledgers: {
        orders: tally,
        events: tally,
        payments: { rows: 11, doubles: 1, lost: 0, unknown: 0 },
        charges: tally,
        shipments: tally,
      },
      doubledKeys: 0,
      pendingEvents: 0,
      deadEvents: 0,
      deadLetters: 0,
      provider: { calls: 10, charges: 10, duplicateCalls: 0, unavailable: 0, slow: 0 },
      latency: { p50Ms: 10, p99Ms: 20 },
    };
    const checks = flowChecks(10, load, outcome, true);
    const table = formatReport({
      title: 'a run with a double',
      orders: 10,
      load,
      outcome,
      settled: true,
      wallMs: 1234,
      faults: [],
      environment: [],
      checks,
      ok: checks.every((c) => c.ok),
    });
    expect(table).toMatch(/payments\s+│\s+11 │\s+1 │\s+0 │/);
    expect(table).toContain('✗ nothing doubled');
    expect(table).toContain('✓ nothing lost');
    expect(table).toContain('FAILED');
    expect(table).toMatch(/wall time\s+│\s+1\.23 s │/);
  });

  it('rejects a nonsensical order count', async () => {
    await expect(runDemo({ orders: 0 })).rejects.toMatchObject({ code: 'INVALID_CONFIG' });
  });
});
