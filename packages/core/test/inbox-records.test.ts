/**
 * The inbox's dedup records live in `inbox_records`, apart from operations' `idempotency`:
 * an inbox consumer and an idempotent operation of the same name no longer take each other's
 * records, and migration 12 moves the inbox's rows of an existing schema out of
 * `idempotency` while leaving operations' rows where they are.
 */
import {
  createAdmin,
  createDeadLetters,
  createInbox,
  createOperations,
  createStore,
  migrate,
  rowsOf,
  type Store,
} from '../src';
import { bodyBytes, fingerprint } from '../src/inbox/fingerprint';
import { migrations } from '../src/store/migrations';
import { STORE_KINDS, databaseUrl, openTestStore, uniqueSchema, type StoreKind } from './db';
import { envelope, freshId } from './fixtures/inbox-support';

const WEEK_MS = 7 * 24 * 3_600_000;

/** The rows of `table` of one name, as `status key` strings in key order. */
async function rowsOfName(
  store: Store,
  table: 'idempotency' | 'inbox_records',
  name: string,
): Promise<string[]> {
  const sql =
    table === 'idempotency'
      ? `select status, key from ${store.names.table(table)} where operation = ? order by key`
      : `select status, message_id as key from ${store.names.table(table)}
          where consumer = ? order by message_id`;
  const result = await store.knex.raw(sql, [name]);
  return rowsOf<{ status: string; key: string }>(result).map((r) => `${r.status} ${r.key}`);
}

// PostgreSQL's only: migration 12 is PostgreSQL's, and the shared-name cases need operations'
// MySQL port (inbox-mysql.test.ts and inbox.test.ts cover the inbox's records on MySQL).
describe.each(STORE_KINDS)('inbox records and operation records on %s', (kind) => {
  describe('a consumer and an operation of the same name', () => {
    let store: Awaited<ReturnType<typeof openTestStore>>;
    beforeAll(async () => {
      store = await openTestStore(kind);
    });
    afterAll(async () => {
      await store.dispose();
    });

    it('a message whose id an operation of that name used as its key is handled', async () => {
      const name = freshId('shared');
      const key = freshId('k');
      const operations = createOperations({ store, operation: name });
      expect(await operations.run(key, { amount: 1 }, async () => ({ charged: true }))).toEqual({
        charged: true,
      });
      let handled = 0;
      const inbox = createInbox({ store, consumer: name });
      const outcome = await inbox.process(envelope(key), async () => {
        handled += 1;
      });
      expect(outcome.status).toBe('processed');
      expect(handled).toBe(1);
      expect((await inbox.process(envelope(key), async () => undefined)).status).toBe('duplicate');
      // The operation's record is untouched: a second call replays it.
      let ran = 0;
      expect(
        await operations.run(key, { amount: 1 }, async () => {
          ran += 1;
          return { charged: false };
        }),
      ).toEqual({ charged: true });
      expect(ran).toBe(0);
    });

    it('an operation whose key a consumer of that name handled as a message id runs', async () => {
      const name = freshId('shared');
      const key = freshId('k');
      const inbox = createInbox({ store, consumer: name });
      expect((await inbox.process(envelope(key), async () => undefined)).status).toBe('processed');
      const operations = createOperations({ store, operation: name });
      expect(await operations.run(key, { amount: 2 }, async () => 'ran')).toBe('ran');
      expect((await inbox.process(envelope(key), async () => undefined)).status).toBe('duplicate');
      // The operator's read finds the operation's record first, the inbox's by its own name.
      const admin = createAdmin(store);
      expect(await admin.operations.get({ operation: name, key })).toMatchObject({
        operation: name,
        status: 'SUCCEEDED',
        response: 'ran',
      });
      const other = freshId('consumer');
      await createInbox({ store, consumer: other }).process(envelope(key), async () => undefined);
      expect(await admin.operations.get({ operation: other, key })).toMatchObject({
        operation: other,
        key,
        status: 'SUCCEEDED',
        ownerId: null,
        response: null,
      });
    });
  });

  describe('migration 12 on a schema at migration 11', () => {
    let store: Store;
    const name = 'billing';
    const handledBody = JSON.stringify({ order: 1 });
    const deadBody = JSON.stringify({ order: 2 });
    let letterId = '';

    beforeAll(async () => {
      store = await openAtVersion(kind, 11);
      await writeLegacyInboxRows(store, name, handledBody, deadBody);
      // Real operation records of the same name: one that succeeded, one that failed for
      // good, and one released by an operator (no owner, FAILED_RETRIABLE).
      const operations = createOperations({ store, operation: name });
      await operations.run('op-ok', { n: 1 }, async () => ({ ok: 1 }));
      await expect(
        operations.run('op-final', { n: 2 }, async () => {
          throw Object.assign(new Error('declined'), { retriable: false });
        }),
      ).rejects.toThrow();
      await store.knex.raw(
        `insert into ${store.names.table('idempotency')}
           (scope, operation, key, request_hash, status, owner_id, attempts, error, expires_at)
         values ('default', ?, 'op-released', 'h', 'FAILED_RETRIABLE', null, 1,
                 '{"code":"RELEASED"}', now() + interval '1 day')`,
        [name],
      );
      letterId = await writeLegacyDeadLetter(store, name, deadBody);
      expect(await rowsOfName(store, 'idempotency', name)).toEqual([
        'FAILED_FINAL m-dead',
        'SUCCEEDED m-handled',
        'FAILED_FINAL op-final',
        'SUCCEEDED op-ok',
        'FAILED_RETRIABLE op-released',
      ]);
      const later = migrations.map((m) => m.version).filter((v) => v >= 12);
      expect(await store.migrate()).toEqual({ applied: later, version: Math.max(...later) });
    });
    afterAll(async () => {
      if (kind === 'postgres')
        await store.knex.raw(`drop schema if exists ${store.names.schema} cascade`);
      await store.close();
    });

    it('moves the inbox rows to inbox_records and leaves the operation rows', async () => {
      expect(await rowsOfName(store, 'inbox_records', name)).toEqual([
        'FAILED_FINAL m-dead',
        'SUCCEEDED m-handled',
      ]);
      expect(await rowsOfName(store, 'idempotency', name)).toEqual([
        'FAILED_FINAL op-final',
        'SUCCEEDED op-ok',
        'FAILED_RETRIABLE op-released',
      ]);
      const moved = rowsOf<{ fingerprint: string; attempts: number; error: unknown }>(
        await store.knex.raw(
          `select fingerprint, attempts, error from ${store.names.table('inbox_records')}
            where consumer = ? and message_id = 'm-dead'`,
          [name],
        ),
      )[0];
      expect(moved).toEqual({
        fingerprint: fingerprint(bodyBytes(deadBody), {}, []),
        attempts: 3,
        error: { reason: 'MAX_ATTEMPTS', code: 'MAX_ATTEMPTS_EXCEEDED' },
      });
    });

    it('a redelivery of a handled message is still a duplicate', async () => {
      let handled = 0;
      const inbox = createInbox({ store, consumer: name });
      const single = await inbox.process(envelope('m-handled', handledBody), async () => {
        handled += 1;
      });
      expect(single.status).toBe('duplicate');
      const batch = await inbox.processBatch(
        [envelope('m-handled', handledBody), envelope('m-new', JSON.stringify({ order: 3 }))],
        async () => {
          handled += 1;
        },
      );
      expect(batch.map((o) => o.status)).toEqual(['duplicate', 'processed']);
      expect(handled).toBe(1);
    });

    it('a redelivery of a dead-lettered message is not handled; its requeue is', async () => {
      const inbox = createInbox({ store, consumer: name });
      let handled = 0;
      const handler = async () => {
        handled += 1;
      };
      expect((await inbox.process(envelope('m-dead', deadBody), handler)).status).toBe(
        'dead-lettered',
      );
      expect(handled).toBe(0);
      const again = await createDeadLetters(store).requeue(letterId);
      expect((await inbox.process(again, handler)).status).toBe('processed');
      expect(handled).toBe(1);
    });

    it('operations still replay, and fail for good, as before', async () => {
      const operations = createOperations({ store, operation: name });
      let ran = 0;
      expect(
        await operations.run('op-ok', { n: 1 }, async () => {
          ran += 1;
          return { ok: 2 };
        }),
      ).toEqual({ ok: 1 });
      await expect(operations.run('op-final', { n: 2 }, async () => 'x')).rejects.toThrow(
        /declined/,
      );
      expect(ran).toBe(0);
    });
  });
});

/** A store of `kind` in a fresh schema, migrated only up to `version`. */
async function openAtVersion(kind: StoreKind, version: number): Promise<Store> {
  const schema = uniqueSchema(kind === 'postgres' ? 'pg' : 'lite');
  const store = await createStore(
    kind === 'postgres' ? { schema, connectionString: databaseUrl() } : { schema, pglite: {} },
  );
  await migrate(
    store.knex,
    store.names,
    migrations.filter((m) => m.version <= version),
  );
  return store;
}

/**
 * The rows the inbox wrote into `idempotency` before migration 12, written with its
 * statements of then: a handled message (`SUCCEEDED`) and a dead-lettered one
 * (`FAILED_FINAL`, after its third attempt), both without an owner.
 */
async function writeLegacyInboxRows(
  store: Store,
  consumer: string,
  handledBody: string,
  deadBody: string,
): Promise<void> {
  const table = store.names.table('idempotency');
  await store.knex.raw(
    `insert into ${table} (scope, operation, key, status, request_hash, attempts, expires_at)
     values ('default', ?, 'm-handled', 'SUCCEEDED', ?, 1,
             now() + ?::double precision * interval '1 millisecond')
     on conflict (scope, operation, key) do nothing`,
    [consumer, fingerprint(bodyBytes(handledBody), {}, []), WEEK_MS],
  );
  await store.knex.raw(
    `insert into ${table}
       (scope, operation, key, status, request_hash, attempts, error, expires_at)
     values ('default', ?, 'm-dead', 'FAILED_FINAL', ?, 3, ?::jsonb,
             now() + ?::double precision * interval '1 millisecond')
     on conflict (scope, operation, key) do nothing`,
    [
      consumer,
      fingerprint(bodyBytes(deadBody), {}, []),
      JSON.stringify({ reason: 'MAX_ATTEMPTS', code: 'MAX_ATTEMPTS_EXCEEDED' }),
      WEEK_MS,
    ],
  );
}

/** The dead letter of the legacy dead-lettered message; resolves to its id. */
async function writeLegacyDeadLetter(
  store: Store,
  consumer: string,
  body: string,
): Promise<string> {
  const result = await store.knex.raw(
    `insert into ${store.names.table('dead_letters')}
       (scope, consumer, message_id, dedupe, fingerprint, reason, error_code, error_message,
        attempts, headers, body, body_is_text, delivery)
     values ('default', ?, 'm-dead', true, ?, 'MAX_ATTEMPTS', 'MAX_ATTEMPTS_EXCEEDED', 'failed',
             3, '{}'::jsonb, ?, true, '{}'::jsonb)
     returning id::text as id`,
    [consumer, fingerprint(bodyBytes(body), {}, []), Buffer.from(body, 'utf8')],
  );
  return rowsOf<{ id: string }>(result)[0]!.id;
}
