/**
 * `justonce status`: the handled-per-consumer section, `--watch` (text and JSON lines, Ctrl-C
 * exits 0), and `migrate` / `status` on a PGlite data directory.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInbox, createStore, type Store } from '@justonce/core';
import { cli, expectRefused, startCli, useSchema } from './cli-process';
import { deadLetters, operationRecords, pendingEvents } from './seed';

/** Something for each section of the screen, and a duplicate delivery. */
async function seed(store: Store): Promise<void> {
  await pendingEvents(store, 'orders', 2);
  const inbox = createInbox({ store, consumer: 'shipping' });
  // s-1 is delivered twice: the second delivery is a duplicate.
  for (const id of ['s-1', 's-2', 's-3', 's-1']) {
    await inbox.process({ id, headers: {}, body: '{}', delivery: {} }, async () => 'ok');
  }
  await inbox.flushActivity();
  await deadLetters(store, 'billing', ['b-1'], 'payments');
  await operationRecords(store, 'charge-card');
}

const db = useSchema('cli_status', seed);
const { inSchema } = db;

describe('status', () => {
  it('--json has the handled and duplicate counts per consumer over the last hour', async () => {
    const run = await inSchema('status', '--json');
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const status = JSON.parse(run.stdout);
    expect(status.schema).toBe(db.store.schema);
    expect(status.consumers).toEqual(
      expect.arrayContaining([
        { name: 'shipping', handledLastHour: 3, duplicatesLastHour: 1, deadLetteredLastHour: 0 },
      ]),
    );
    expect(status.outbox).toEqual([
      { destination: 'orders', pending: 2, oldestPendingSeconds: expect.any(Number), dead: 0 },
    ]);
    expect(status.deadLetters).toEqual([
      { consumer: 'billing', reason: 'MAX_ATTEMPTS', count: 1, newestAt: expect.any(String) },
    ]);
    expect(status.operations).toEqual([{ operation: 'charge-card', inProgress: 1, pastLease: 1 }]);
    // No consumer with `resilience` reported (see status-load-shedding.test.ts).
    expect(status.resilience).toEqual([]);
  });

  it('prints every section on one screen', async () => {
    const run = await inSchema('status');
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/Consumers and operations, handled \(last hour\)/);
    expect(run.stdout).toMatch(/duplicates\s*│\s*dead-lettered/);
    expect(run.stdout).toMatch(/shipping\s*│\s*3\s*│\s*1\s*│\s*0\s*│/);
    expect(run.stdout).toMatch(/orders\s*│\s*2/);
    expect(run.stdout).toMatch(/billing\s*│\s*MAX_ATTEMPTS\s*│\s*1/);
    expect(run.stdout).toMatch(/charge-card\s*│\s*1\s*│\s*1/);
    expect(run.stdout).toMatch(/Retention backlog/);
    expect(run.stdout).not.toMatch(/Load shedding/);
  });

  it('--watch --json prints one JSON line per refresh; SIGINT (Ctrl-C) exits 0', async () => {
    const watch = startCli([
      '--schema',
      db.store.schema,
      'status',
      '--watch',
      '--json',
      '--interval',
      '0.2',
    ]);
    await watch.stdoutMatching(/(.*\n){3}/);
    const run = await watch.stop('SIGINT');
    expect(run.code).toBe(0);
    const lines = run.stdout.trim().split('\n');
    expect(lines.length).toBeGreaterThanOrEqual(3);
    for (const line of lines) expect(JSON.parse(line).outbox[0].pending).toBe(2);
  });

  it('--watch refreshes the screen until SIGTERM, exit 0', async () => {
    const watch = startCli(['--schema', db.store.schema, 'status', '--watch', '--interval', '0.2']);
    await watch.stdoutMatching(/(Retention backlog[^]*){2}/);
    const run = await watch.stop('SIGTERM');
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/every 0.2s; Ctrl-C to stop/);
  });

  it.each([
    [['status', '--interval', '1'], /--interval goes with --watch/],
    [['status', '--watch', '--interval', '0'], /--interval must be a number of seconds/],
    [['status', '--watch', '--interval', 'soon'], /--interval must be a number of seconds/],
  ])('bad arguments %j: exit 2, nothing changed', async (args, message) => {
    await expectRefused(db.store, args, message);
  });
});

describe('on a PGlite data directory', () => {
  const dirs: string[] = [];
  afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

  it('migrate creates the tables, status reads the data the app wrote', async () => {
    const parent = mkdtempSync(join(tmpdir(), 'justonce-cli-'));
    dirs.push(parent);
    const dir = join(parent, 'data');
    const dry = await cli(['--pglite', dir, 'migrate', '--dry-run']);
    expect(dry.code).toBe(2);
    expect(dry.stderr).toMatch(
      /is not a directory \(justonce migrate, without --dry-run, creates one\)/,
    );
    const migrated = await cli(['--pglite', dir, 'migrate']);
    expect(migrated.stderr).toBe('');
    expect(migrated.code).toBe(0);
    expect(migrated.stdout).toMatch(/applied \d+ migration\(s\) to schema justonce/);

    // The application writes, and closes its database (PGlite is single-process).
    const app = await createStore({ pglite: { dataDir: dir } });
    await pendingEvents(app, 'invoices', 3);
    await deadLetters(app, 'mailer', ['m-1', 'm-2'], 'emails');
    await app.close();

    const status = await cli(['--pglite', dir, 'status', '--json']);
    expect(status.stderr).toBe('');
    expect(status.code).toBe(0);
    const figures = JSON.parse(status.stdout);
    expect(figures.outbox).toEqual([
      { destination: 'invoices', pending: 3, oldestPendingSeconds: expect.any(Number), dead: 0 },
    ]);
    expect(figures.deadLetters[0]).toMatchObject({ consumer: 'mailer', count: 2 });
    const text = await cli(['--pglite', dir, 'status']);
    expect(text.stdout).toMatch(/invoices\s*│\s*3/);
    const again = await cli(['--pglite', dir, 'migrate', '--dry-run']);
    expect(again.stdout).toMatch(/is up to date/);
  });

  it('refuses a missing directory and --pglite with --database-url: exit 2', async () => {
    const missing = await cli(['--pglite', join(tmpdir(), 'justonce-no-such-dir'), 'status']);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/is not a directory/);
    const both = await cli(['--pglite', tmpdir(), '--database-url', 'postgres://x/y', 'status']);
    expect(both.code).toBe(2);
    expect(both.stderr).toMatch(/either --database-url or --pglite, not both/);
  });
});
