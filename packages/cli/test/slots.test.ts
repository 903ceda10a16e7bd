/**
 * Replication slots in the CLI, on the logical-replication PostgreSQL (`LOGICAL_DATABASE_URL`):
 * `status` shows a line per slot, `slots drop` asks on a terminal (no keeps the slot, yes drops
 * it), needs `--yes` off a terminal, and refuses a slot that `pg_recvlogical` is reading; on
 * the main server there are none.
 */
import { createStore, type Store } from '@justonce/core';
import { logicalDatabaseUrl } from '../../../test-support/services';
import { createSlotFixture, type SlotFixture } from '../../../test-support/replication-slots';
import { cli, cliOnTerminal, schemaName } from './cli-process';

let store: Store;
let url: string;
const fixtures: SlotFixture[] = [];

async function slot(prefix: string, wal = 0): Promise<SlotFixture> {
  const fixture = await createSlotFixture(prefix);
  fixtures.push(fixture);
  if (wal > 0) await fixture.writeWal(wal);
  return fixture;
}

/** `justonce --database-url <logical> args…`. */
const onLogical = (...args: string[]) =>
  cli(['--database-url', url, '--schema', store.schema, ...args]);

beforeAll(async () => {
  url = logicalDatabaseUrl();
  store = await createStore({ connectionString: url, schema: schemaName('cli_slots') });
  await store.migrate();
});

afterAll(async () => {
  for (const fixture of fixtures) await fixture.dispose();
  if (store !== undefined) {
    await store.knex.raw(`drop schema if exists ${store.names.schema} cascade`);
    await store.close();
  }
});

describe('status', () => {
  it('prints a line per slot: name, active, lag, lag time, retained WAL, wal status', async () => {
    const fixture = await slot('jo_cli_status', 4000);
    const text = await onLogical('status');
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/Replication slots \(logical\)/);
    // Inactive, its lag in KiB or MiB, seconds unknown, the WAL safe.
    expect(text.stdout).toMatch(
      new RegExp(
        `${fixture.name}\\s*│\\s*no\\s*│\\s*[\\d.]+ (KiB|MiB)\\s*│\\s*-\\s*│\\s*[\\d.]+ (KiB|MiB)\\s*│\\s*reserved`,
      ),
    );
    const json = await onLogical('status', '--json');
    const listed = JSON.parse(json.stdout).slots.find(
      (s: { name: string }) => s.name === fixture.name,
    );
    expect(listed).toMatchObject({ name: fixture.name, active: false, walStatus: 'reserved' });
    expect(listed.lagBytes).toBeGreaterThan(4000 * 200);
  });

  it('lists none on the main server (wal_level replica)', async () => {
    const main = await cli(['--schema', store.schema, 'slots', 'list']);
    expect(main.code).toBe(0);
    expect(main.stdout).toMatch(/no logical replication slots in this database/);
  });
});

describe('slots drop', () => {
  it('asks on a terminal: "no" keeps the slot, "yes" drops it', async () => {
    const fixture = await slot('jo_cli_drop', 100);
    const args = ['--database-url', url, 'slots', 'drop', fixture.name];
    const declined = await cliOnTerminal(args, 'n\r');
    expect(declined.stdout).toMatch(
      new RegExp(`Drop replication slot ${fixture.name} \\(pgoutput, inactive, .*\\[y/N\\]`, 's'),
    );
    expect(declined.stdout).toMatch(/nothing changed/);
    expect(declined.code).toBe(1);
    expect(await fixture.exists()).toBe(true);

    const accepted = await cliOnTerminal(args, 'y\r');
    expect(accepted.stdout).toMatch(new RegExp(`dropped replication slot ${fixture.name}`));
    expect(accepted.code).toBe(0);
    expect(await fixture.exists()).toBe(false);
  });

  it('needs --yes off a terminal; with it, drops at once', async () => {
    const fixture = await slot('jo_cli_yes');
    const refused = await onLogical('slots', 'drop', fixture.name);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/needs --yes when not run on a terminal; nothing changed/);
    expect(await fixture.exists()).toBe(true);
    const dropped = await onLogical('slots', 'drop', fixture.name, '--yes', '--json');
    expect(dropped.code).toBe(0);
    expect(JSON.parse(dropped.stdout)).toEqual({ dropped: fixture.name });
    expect(await fixture.exists()).toBe(false);
  });

  it('refuses a slot being read, without asking', async () => {
    const fixture = await slot('jo_cli_busy');
    const reader = await fixture.hold();
    try {
      const run = await cliOnTerminal(
        ['--database-url', url, 'slots', 'drop', fixture.name],
        'y\r',
      );
      expect(run.stdout).not.toMatch(/\[y\/N\]/);
      expect(run.stdout).toMatch(
        new RegExp(`replication slot ${fixture.name} is being read by process \\d+`),
      );
      expect(run.code).toBe(1);
      expect(await fixture.exists()).toBe(true);
      const scripted = await onLogical('slots', 'drop', fixture.name, '--yes');
      expect(scripted.code).toBe(1);
      expect(scripted.stderr).toMatch(/is being read by process \d+: stop its reader/);
      expect(await fixture.exists()).toBe(true);
    } finally {
      await reader.stop();
    }
  });

  it.each([
    [
      ['slots', 'drop', 'jo_cli_absent_slot', '--yes'],
      1,
      /no logical replication slot jo_cli_absent_slot/,
    ],
    [['slots', 'drop', 'Not-A-Slot', '--yes'], 2, /a replication slot name is 1-63 characters/],
    [['slots', 'drop'], 2, /missing required argument 'name'/],
  ])('%j: exit %i', async (args, code, message) => {
    const run = await onLogical(...args);
    expect(run.stderr).toMatch(message);
    expect(run.code).toBe(code);
  });
});
