/**
 * The operator's figures and commands on a store whose outbox is partitioned
 * (`layout: 'partitioned'`): `status`, `outbox list`, `outbox requeue` and `cleanup` read and
 * change the partitioned table as they do the plain one.
 */
import { createStore, type Store } from '@justonce/core';
import { cli, dropStore, schemaName, URL } from './cli-process';
import { outboxBacklog } from './seed';

let store: Store;
beforeAll(async () => {
  store = await createStore({
    connectionString: URL,
    schema: schemaName('cli_part'),
    layout: 'partitioned',
  });
  await store.migrate();
  await outboxBacklog(store);
});
afterAll(() => dropStore(store));

const inSchema = (...args: string[]) => cli(['--schema', store.schema, ...args]);

describe('the CLI on a partitioned outbox', () => {
  it('status counts pending and dead events per destination', async () => {
    const run = await inSchema('status', '--json');
    expect(run.code).toBe(0);
    const status = JSON.parse(run.stdout) as { outbox: unknown[] };
    expect(status.outbox).toEqual(
      expect.arrayContaining([
        { destination: 'orders', pending: 0, oldestPendingSeconds: null, dead: 3 },
        { destination: 'emails', pending: 0, oldestPendingSeconds: null, dead: 1 },
        { destination: 'invoices', pending: 2, oldestPendingSeconds: expect.any(Number), dead: 0 },
      ]),
    );
  });

  it('lists and requeues dead events', async () => {
    const listed = await inSchema('outbox', 'list', '--destination', 'orders', '--json');
    expect(listed.stderr).toBe('');
    expect(listed.code).toBe(1); // dead events listed
    const ids = (JSON.parse(listed.stdout) as Array<{ id: string }>).map((e) => e.id);
    expect(ids).toHaveLength(3);
    const requeued = await inSchema('outbox', 'requeue', ids[0]!);
    expect(requeued.stderr).toBe('');
    expect(requeued.code).toBe(0);
    const status = JSON.parse((await inSchema('status', '--json')).stdout) as {
      outbox: Array<{ destination: string; pending: number; dead: number }>;
    };
    expect(status.outbox.find((d) => d.destination === 'orders')).toMatchObject({
      pending: 1,
      dead: 2,
    });
  });

  it("cleanup reports the outbox's partitions beside the other tables", async () => {
    const run = await inSchema('cleanup', '--json');
    expect(run.code).toBe(0);
    const result = JSON.parse(run.stdout) as {
      tables: Record<string, { partitions?: { dropped: number; busy: boolean } }>;
    };
    expect(result.tables['outbox']?.partitions).toMatchObject({ dropped: 0, busy: false });
  });
});
