/**
 * The CLI on a MySQL URL (`--database-url mysql://…`), against the MariaDB of the test setup:
 * `migrate`, `status`, and the read and change commands of dead letters, the outbox and
 * operations, and `cleanup`, on data the real inbox, outbox, relay and operations made.
 */
import { createInbox, createOperations, createStore, type Store } from '@justonce/core';
import { cli, schemaName, type Run } from './cli-process';
import { deadEvents, deadLetters, pendingEvents } from './seed';

const MYSQL_URL = process.env['MYSQL_URL'];
if (MYSQL_URL === undefined)
  throw new Error('MYSQL_URL is not set: run the tests through `pnpm test`');
const SCHEMA = schemaName('cli_my');
/** `justonce --database-url <MySQL> --schema <this file's database> args…`. */
const my = (...args: string[]): Promise<Run> =>
  cli(['--database-url', MYSQL_URL, '--schema', SCHEMA, ...args]);

let store: Store;

beforeAll(async () => {
  store = await createStore({ connectionString: MYSQL_URL, schema: SCHEMA });
});
afterAll(async () => {
  await store.knex.raw(`drop database if exists ${store.names.schema}`);
  await store.close();
});

/** The JSON a run printed that exited `code` (`list` exits 1 when it lists a dead one). */
function jsonOf(run: Run, code = 0): unknown {
  // What the CLI said, in the failure, when it did not end as expected.
  if (run.code !== code || run.stderr !== '') {
    throw new Error(`exit ${run.code}\nstdout: ${run.stdout}\nstderr: ${run.stderr}`);
  }
  return JSON.parse(run.stdout);
}

describe('justonce on a MySQL URL', () => {
  it('status before migrate says to migrate; migrate creates the tables, then has nothing to do', async () => {
    const before = await my('status');
    expect(before.code).toBe(1);
    expect(before.stderr).toMatch(/run: justonce migrate/);
    expect((await my('migrate')).code).toBe(0);
    expect(jsonOf(await my('migrate', '--json'))).toMatchObject({ schema: SCHEMA, applied: [] });

    // Data made by the real features, through the store the CLI just migrated.
    await deadEvents(store, 'orders', 2);
    await pendingEvents(store, 'invoices', 1);
    await deadLetters(store, 'billing', ['b-1', 'b-2'], 'payments');
    const inbox = createInbox({ store, consumer: 'shipping' });
    for (const id of ['s-1', 's-2', 's-1']) {
      await inbox.process({ id, headers: {}, body: '{}', delivery: {} }, async () => 'ok');
    }
    await inbox.flushActivity();
    await createOperations({ store, operation: 'charge-card', leaseMs: 600_000 }).reserve(
      'k-live',
      { a: 1 },
    );
  });

  it('status --json and the text screen', async () => {
    const status = jsonOf(await my('status', '--json'));
    expect(status).toMatchObject({
      schema: SCHEMA,
      outbox: expect.arrayContaining([
        { destination: 'orders', pending: 0, oldestPendingSeconds: null, dead: 2 },
        { destination: 'invoices', pending: 1, oldestPendingSeconds: expect.any(Number), dead: 0 },
      ]),
      deadLetters: [
        { consumer: 'billing', reason: 'MAX_ATTEMPTS', count: 2, newestAt: expect.any(String) },
      ],
      operations: [{ operation: 'charge-card', inProgress: 1, pastLease: 0 }],
    });
    expect((status as { consumers: unknown[] }).consumers).toEqual(
      expect.arrayContaining([
        { name: 'shipping', handledLastHour: 2, duplicatesLastHour: 1, deadLetteredLastHour: 0 },
      ]),
    );
    const screen = await my('status');
    expect(screen.code).toBe(0);
    expect(screen.stdout).toMatch(/shipping\s*│\s*2\s*│\s*1\s*│\s*0\s*│/);
    expect(screen.stdout).toMatch(/billing\s*│\s*MAX_ATTEMPTS\s*│\s*2/);
  });

  it('dead-letters list, show and requeue', async () => {
    const letters = jsonOf(await my('dead-letters', 'list', '--json'), 1) as {
      id: string;
      messageId: string;
      reason: string;
    }[];
    expect(letters.map((l) => [l.messageId, l.reason])).toEqual([
      ['b-1', 'MAX_ATTEMPTS'],
      ['b-2', 'MAX_ATTEMPTS'],
    ]);
    const shown = await my('dead-letters', 'show', letters[0]!.id);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain('b-1');
    expect(jsonOf(await my('dead-letters', 'requeue', letters[0]!.id, '--json'))).toMatchObject({
      requeued: [expect.anything()],
    });
    const waiting = jsonOf(
      await my('dead-letters', 'list', '--consumer', 'billing', '--json'),
      1,
    ) as { messageId: string }[];
    expect(waiting.map((l) => l.messageId)).toEqual(['b-2']);
  });

  it('outbox list, show, requeue and delete', async () => {
    const dead = jsonOf(await my('outbox', 'list', '--status', 'dead', '--json'), 1) as {
      id: string;
      destination: string;
    }[];
    expect(dead.map((e) => e.destination)).toEqual(['orders', 'orders']);
    expect(jsonOf(await my('outbox', 'show', dead[0]!.id, '--json'))).toMatchObject({
      id: dead[0]!.id,
      status: 'dead',
    });
    const requeued = jsonOf(
      await my('outbox', 'requeue', '--destination', 'orders', '--yes', '--json'),
    ) as { requeued: unknown[] };
    expect(requeued.requeued).toHaveLength(2);
    expect(jsonOf(await my('outbox', 'list', '--status', 'dead', '--json'))).toEqual([]);
    const pending = jsonOf(await my('outbox', 'list', '--status', 'pending', '--json')) as {
      destination: string;
      messageId: string;
    }[];
    // The invoice, the dead letter requeued to its source above, and the two requeued orders.
    expect(pending.map((e) => e.destination)).toEqual(['invoices', 'payments', 'orders', 'orders']);
    expect(pending[1]?.messageId).toBe('b-1');
    const deleted = await my('outbox', 'delete', '--status', 'pending', '--yes');
    expect(deleted.code).toBe(0);
    expect(jsonOf(await my('outbox', 'list', '--json'))).toEqual([]);
  });

  it('operations list, show and release', async () => {
    const live = jsonOf(await my('operations', 'list', '--json')) as { key: string }[];
    expect(live.map((o) => o.key)).toEqual(['k-live']);
    expect(jsonOf(await my('operations', 'show', 'charge-card', 'k-live', '--json'))).toMatchObject(
      { status: 'IN_PROGRESS', pastLease: false },
    );
    const released = await my('operations', 'release', 'charge-card', 'k-live', '--force');
    expect(released).toMatchObject({ code: 0, stderr: '' });
    expect(jsonOf(await my('operations', 'list', '--json'))).toEqual([]);
  });

  it('cleanup --json with the defaults: nothing this young deleted, dead letters kept', async () => {
    const result = jsonOf(await my('cleanup', '--json'));
    expect(result).toMatchObject({
      deleted: 0,
      outboxDeleted: 0,
      complete: true,
      tables: { dead_letters: { skipped: 'disabled' } },
    });
  });

  it('cleanup --dead-letters 1s deletes the dead letters older than that', async () => {
    // Made in the first test, many CLI runs ago: older than a second on the database's clock.
    const [old] = await store
      .knex(store.names.raw('dead_letters'))
      .withSchema(SCHEMA)
      .whereRaw('dead_at < current_timestamp(6) - interval 1 second')
      .count({ n: '*' });
    expect(Number(old?.n)).toBe(2);
    const result = jsonOf(await my('cleanup', '--dead-letters', '1s', '--json'));
    expect(result).toMatchObject({ complete: true, tables: { dead_letters: { deleted: 2 } } });
    expect(jsonOf(await my('dead-letters', 'list', '--requeued', '--json'))).toEqual([]);
  });
});
