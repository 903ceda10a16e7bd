/**
 * `justonce dashboard`: serves the dashboard of @justonce/dashboard on the store until
 * SIGINT or SIGTERM (exit 0); bad options refused with exit 2.
 */
import { createStore, type Store } from '@justonce/core';
import { logicalDatabaseUrl } from '../../../test-support/services';
import { dropStore, schemaName, startCli, useSchema } from './cli-process';
import { deadLetters, pendingEvents } from './seed';

const db = useSchema('cli_dash', async (store: Store) => {
  await pendingEvents(store, 'orders', 2);
  await deadLetters(store, 'billing', ['b-1'], 'payments');
});
const { inSchema } = db;

/** Starts the dashboard on a free port and resolves with its URL. */
async function serve(args: readonly string[], env: Record<string, string> = {}) {
  const running = startCli(['--schema', db.store.schema, 'dashboard', '--port', '0', ...args], env);
  const out = await running.stdoutMatching(/justonce dashboard on (http:\/\/\S+)/);
  const url = /justonce dashboard on (http:\/\/\S+)/.exec(out)![1]!;
  return { running, url };
}

describe('dashboard', () => {
  it('serves the overview on 127.0.0.1 until SIGINT, exit 0; reads need no token', async () => {
    const { running, url } = await serve([]);
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\//);
    const page = await fetch(url);
    expect(page.status).toBe(200);
    expect(await page.text()).toMatch(/orders/);
    const run = await running.stop('SIGINT');
    expect(run.code).toBe(0);
    expect(run.stderr).toMatch(/no token .*actions are refused/);
    await expect(fetch(url)).rejects.toThrow();
  });

  it('takes the token from JUSTONCE_DASHBOARD_TOKEN; SIGTERM ends it with exit 0', async () => {
    const { running, url } = await serve([], {
      JUSTONCE_DASHBOARD_TOKEN: 'a-long-operator-token-1234',
    });
    expect((await fetch(url)).status).toBe(200);
    const run = await running.stop('SIGTERM');
    expect(run.code).toBe(0);
    expect(run.stderr).not.toMatch(/no token/);
  });

  it.each([
    [['dashboard', '--port', '70000'], /--port must be an integer from 0 to 65535/],
    [['dashboard', '--port', '0', '--token', 'short'], /token/],
    [['dashboard', '--host', ''], /--host must not be empty/],
  ])('bad arguments %j: exit 2', async (args, message) => {
    const run = await inSchema(...args);
    expect(run.stderr).toMatch(message);
    expect(run.code).toBe(2);
  });
});

describe('dashboard --slot-lag-warning', () => {
  // Slots exist only where wal_level is logical: a schema and a slot of this test's own on
  // the logical server, with WAL written after the slot so that it is behind by some bytes.
  const url = logicalDatabaseUrl();
  const slot = `cli_dash_lag_${process.pid}`;
  let store: Store;

  beforeAll(async () => {
    store = await createStore({ connectionString: url, schema: schemaName('cli_dash_lag') });
    await store.migrate();
    await store.knex.raw(`select pg_create_logical_replication_slot(?, 'pgoutput')`, [slot]);
    await store.knex.raw(`create table ${store.names.schema}.wal_filler (n int)`);
    await store.knex.raw(
      `insert into ${store.names.schema}.wal_filler select generate_series(1, 1000)`,
    );
  });
  afterAll(async () => {
    await store.knex.raw(
      `select pg_drop_replication_slot(slot_name) from pg_replication_slots where slot_name = ?`,
      [slot],
    );
    await dropStore(store);
  });

  /** The overview's row of this test's slot, served with `args`. */
  async function slotRow(args: readonly string[]): Promise<string> {
    const running = startCli(['--schema', store.schema, 'dashboard', '--port', '0', ...args], {
      DATABASE_URL: url,
    });
    try {
      const out = await running.stdoutMatching(/justonce dashboard on (http:\/\/\S+)/);
      const page = await (
        await fetch(/justonce dashboard on (http:\/\/\S+)/.exec(out)![1]!)
      ).text();
      const row = new RegExp(`<tr[^>]*data-slot="${slot}"`).exec(page);
      if (row === null) throw new Error(`no row of slot ${slot} on the overview`);
      return row[0];
    } finally {
      await running.stop('SIGTERM');
    }
  }

  it('marks a slot behind by the given bytes or more; the 1 GiB default does not', async () => {
    expect(await slotRow(['--slot-lag-warning', '1'])).toMatch(/class="warn"/);
    expect(await slotRow([])).not.toMatch(/class="warn"/);
  });

  it.each([['0'], ['1.5']])('refuses --slot-lag-warning %s: exit 2', async (value) => {
    const run = await inSchema('dashboard', '--slot-lag-warning', value);
    expect(run.stderr).toMatch(/--slot-lag-warning must be an integer from 1/);
    expect(run.code).toBe(2);
  });
});
