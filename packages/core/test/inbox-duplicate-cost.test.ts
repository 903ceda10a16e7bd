/**
 * What a known duplicate costs: a delivery of a message whose record is committed as handled
 * is decided by one statement, a read, with no transaction and no write — per message when
 * the delivery counts its attempt (a redelivery, or a transport that reports nothing), and in
 * a batch whatever the transport said of the delivery. Statements are counted at the driver
 * on PostgreSQL (node-postgres' `Client.prototype.query`, which every statement reaches, knex's
 * and those the store runs on a connection directly) and through knex's `query` event on
 * PGlite (whose statements all go through knex). Writes are seen in the tables: any insert,
 * update or delete changes the set of (ctid, xmin) pairs.
 */
import { Client } from 'pg';
import { createInbox, rowsOf, type Envelope, type Store } from '../src';
import { ALL_STORE_KINDS, openTestStore, type StoreKind } from './db';
import { envelope, freshId } from './fixtures/inbox-support';

/** The longest activity flush interval: no flush lands inside a measured section. */
const HOUR_MS = 3_600_000;

/**
 * MySQL has no row versions to read: a checksum of each table's rows instead, which any
 * insert or delete changes, and any update that changes a value.
 */
async function mysqlChecksums(store: Store): Promise<string[]> {
  const schema = store.names.schema.replace(/^`|`$/g, '');
  const tables = rowsOf<{ name: string }>(
    await store.knex.raw(
      `select table_name as name from information_schema.tables
        where table_schema = ? and table_type = 'BASE TABLE' order by table_name`,
      [schema],
    ),
  );
  const sums: string[] = [];
  for (const { name } of tables) {
    const [row] = rowsOf<{ Checksum: string | number | null }>(
      await store.knex.raw('checksum table ??.??', [schema, name]),
    );
    sums.push(`${name} ${String(row?.Checksum)}`);
  }
  return sums;
}

/** Every row of every table of the store's schema, as `table ctid xmin`. */
async function rowVersions(store: Store): Promise<string[]> {
  if (store.dialect === 'mysql') return mysqlChecksums(store);
  const schema = store.names.schema.replace(/^"|"$/g, '');
  const tables = rowsOf<{ name: string }>(
    await store.knex.raw(
      `select table_name as name from information_schema.tables
        where table_schema = ? and table_type = 'BASE TABLE' order by table_name`,
      [schema],
    ),
  );
  const versions: string[] = [];
  for (const { name } of tables) {
    const rows = rowsOf<{ v: string }>(
      await store.knex.raw(`select ctid::text || ' ' || xmin::text as v from ??.??`, [
        schema,
        name,
      ]),
    );
    versions.push(...rows.map((r) => `${name} ${r.v}`).sort());
  }
  return versions;
}

/** Where each statement sent through node-postgres is reported while a section is measured. */
let onPgStatement: ((text: string) => void) | undefined;
// Before any store connects: the store binds each new connection's `query` as it finds it.
const pgProto = Client.prototype as unknown as { query: (...args: unknown[]) => unknown };
const pgQuery = pgProto.query;
pgProto.query = function query(this: unknown, ...args: unknown[]) {
  const first = args[0];
  onPgStatement?.(typeof first === 'string' ? first : String((first as { text?: unknown }).text));
  return pgQuery.apply(this, args);
};
afterAll(() => {
  pgProto.query = pgQuery;
});

/** The statements `work` sends to the database, and whether it wrote any row. */
async function measured(store: Store, kind: StoreKind, work: () => Promise<void>) {
  const before = await rowVersions(store);
  const statements: string[] = [];
  const listener = (query: { sql: string }) => statements.push(query.sql);
  if (kind === 'postgres') onPgStatement = (text) => statements.push(text);
  else store.knex.on('query', listener);
  try {
    await work();
  } finally {
    onPgStatement = undefined;
    store.knex.off('query', listener);
  }
  return { statements, wrote: (await rowVersions(store)).join('\n') !== before.join('\n') };
}

describe.each(ALL_STORE_KINDS)('a known duplicate on %s', (kind) => {
  let store: Awaited<ReturnType<typeof openTestStore>>;
  beforeAll(async () => {
    store = await openTestStore(kind);
  });
  afterAll(async () => {
    await store.dispose();
  });

  const inboxFor = () => createInbox({ store, consumer: freshId('dup'), activityFlushMs: HOUR_MS });
  const handled = async (inbox: ReturnType<typeof inboxFor>, envelopes: Envelope[]) => {
    const outcomes = await inbox.processBatch(envelopes, async () => 'done');
    expect(outcomes.map((o) => o.status)).toEqual(envelopes.map(() => 'processed'));
  };

  const kinds = {
    'a redelivery (redelivered flag)': { redelivered: true },
    'a redelivery (receive count)': { receiveCount: 2 },
    'a delivery with no facts (counted)': {},
  } as const;
  /** The one statement per message: a reported redelivery's read, else the count's. */
  const statement = {
    'a redelivery (redelivered flag)': /^select scope, message_id, status, fingerprint from /,
    'a redelivery (receive count)': /^select scope, message_id, status, fingerprint from /,
    // MySQL's count reads the committed records before it opens its transaction.
    'a delivery with no facts (counted)':
      kind === 'mysql' ? /^select scope, message_id, fingerprint from / : /^with handled as \(/,
  } as const;

  describe.each(Object.entries(kinds))('per message, %s', (name, delivery) => {
    it('is one read: no transaction, no write', async () => {
      const inbox = inboxFor();
      const copy = envelope(freshId(), undefined, { delivery });
      await handled(inbox, [{ ...copy, delivery: { redelivered: false } }]);
      const cost = await measured(store, kind, async () => {
        expect((await inbox.process(copy, async () => 'again')).status).toBe('duplicate');
      });
      expect(cost.statements).toHaveLength(1);
      expect(cost.statements[0]?.trim()).toMatch(statement[name as keyof typeof statement]);
      expect(cost.wrote).toBe(false);
    });
  });

  describe.each(Object.entries({ ...kinds, 'declared first deliveries': { redelivered: false } }))(
    'a batch of %s',
    (_name, delivery) => {
      it('is one read for the whole chunk: no transaction, no write', async () => {
        const inbox = inboxFor();
        const ids = Array.from({ length: 5 }, () => freshId());
        await handled(
          inbox,
          ids.map((id) => envelope(id, undefined, { delivery: { redelivered: false } })),
        );
        const cost = await measured(store, kind, async () => {
          const outcomes = await inbox.processBatch(
            ids.map((id) => envelope(id, undefined, { delivery })),
            async () => 'again',
          );
          expect(outcomes.map((o) => o.status)).toEqual(ids.map(() => 'duplicate'));
        });
        expect(cost.statements).toHaveLength(1);
        expect(cost.wrote).toBe(false);
      });
    },
  );

  it('a batch mixing known duplicates and new messages claims only the new ones', async () => {
    const inbox = inboxFor();
    const old = [freshId(), freshId()];
    await handled(
      inbox,
      old.map((id) => envelope(id)),
    );
    const fresh = [freshId(), freshId()];
    const ran: string[] = [];
    const outcomes = await inbox.processBatch(
      [old[0], fresh[0], old[1], fresh[1]].map((id) =>
        envelope(id, undefined, { delivery: { redelivered: false } }),
      ),
      async ({ messageId }) => {
        ran.push(messageId);
      },
    );
    expect(outcomes.map((o) => o.status)).toEqual([
      'duplicate',
      'processed',
      'duplicate',
      'processed',
    ]);
    expect(ran).toEqual(fresh);
  });
});
