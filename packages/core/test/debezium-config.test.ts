/**
 * The Debezium connector configuration and the outbox's header columns: the shipped
 * `docker/debezium/outbox-connector.json` is what the function produces, options are checked
 * at construction, the header columns come out in the order PostgreSQL's `jsonb` gives the
 * polling relay (any header names, checked against a real server), and the schema's trigger
 * copies what `outbox.add` writes. The relay through a real Connect worker is
 * packages/kafka/test/debezium-outbox.test.ts.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import pg from 'pg';
import {
  ConfigurationError,
  createOutbox,
  debeziumOutboxConnector,
  debeziumOutboxSchema,
  type DebeziumOutboxConnectorOptions,
} from '../src';
import { fcRuns } from '../../../test-support/fuzz';
import { databaseUrl, openTestStore } from './db';

/** The options `docker/debezium/outbox-connector.json` is generated with. */
const SHIPPED: DebeziumOutboxConnectorOptions = {
  databaseUrl: 'postgres://postgres@postgres:5432/test',
};
const SHIPPED_FILE = join(
  __dirname,
  '..',
  '..',
  '..',
  'docker',
  'debezium',
  'outbox-connector.json',
);

function placement(options: DebeziumOutboxConnectorOptions): Array<[string, string]> {
  const config = debeziumOutboxConnector(options).config;
  return config['transforms.outbox.table.fields.additional.placement']!.split(',').map((entry) => {
    const [column, where, header] = entry.split(':');
    expect(where).toBe('header');
    return [column!, header!];
  });
}

describe('debeziumOutboxConnector', () => {
  it('is what docker/debezium/outbox-connector.json ships', () => {
    const shipped = JSON.parse(readFileSync(SHIPPED_FILE, 'utf8')) as unknown;
    expect(shipped).toEqual(debeziumOutboxConnector(SHIPPED));
  });

  it('maps the database URL, slot, publication and table, and keeps the value as bytes', () => {
    const { name, config } = debeziumOutboxConnector({
      databaseUrl: 'postgresql://app%40shop:p%3Ass@db.internal:6543/orders',
      schema: 'shop',
      tablePrefix: 'jo_',
      slot: 'shop_slot',
      publication: 'shop_pub',
      name: 'shop-outbox',
    });
    expect(name).toBe('shop-outbox');
    expect(config).toMatchObject({
      'database.hostname': 'db.internal',
      'database.port': '6543',
      'database.user': 'app@shop',
      'database.password': 'p:ss',
      'database.dbname': 'orders',
      'slot.name': 'shop_slot',
      'publication.name': 'shop_pub',
      'table.include.list': 'shop\\.jo_outbox',
      'value.converter': 'org.apache.kafka.connect.converters.ByteArrayConverter',
      'transforms.outbox.route.by.field': 'destination',
    });
    expect(Object.values(config).every((value) => typeof value === 'string')).toBe(true);
    // No password in the URL: no password setting.
    expect(debeziumOutboxConnector(SHIPPED).config).not.toHaveProperty('database.password');
  });

  it.each([
    [{ ...SHIPPED, slots: 'x' }, /unknown option `slots`; did you mean `slot`\?/],
    [{ databaseUrl: 'mysql://root@db/test' }, /Debezium reads PostgreSQL only/],
    [{ databaseUrl: 'not a url' }, /databaseUrl is not a URL/],
    [{ databaseUrl: 42 }, /databaseUrl must be a PostgreSQL URL/],
    [{ ...SHIPPED, schema: 'Shop' }, /schema "Shop" is not a valid identifier/],
    [{ ...SHIPPED, slot: 'my-slot' }, /slot "my-slot" is not a valid identifier/],
    [{ ...SHIPPED, headers: ['a:b'] }, /header "a:b" cannot have a column/],
    [{ ...SHIPPED, headers: 'x-one' }, /headers must be an array/],
    [{ ...SHIPPED, headers: ['x.id', 'x-id'] }, /would share the column header_x_id/],
    [{ ...SHIPPED, headers: ['Type'] }, /"Type" and "type" would share the column header_type/],
    [{ ...SHIPPED, snapshot: 'always' }, /snapshot must be 'no_data' or 'initial'/],
    [{ ...SHIPPED, name: 'two\nlines' }, /name must be a non-empty string on one line/],
  ])('refuses %j', (options, message) => {
    const attempt = () => debeziumOutboxConnector(options as DebeziumOutboxConnectorOptions);
    expect(attempt).toThrow(ConfigurationError);
    expect(attempt).toThrow(message);
  });

  it('names the password in no error', () => {
    expect(() => debeziumOutboxConnector({ databaseUrl: 'mysql://u:secret-pw@db/x' })).toThrow(
      expect.objectContaining({ message: expect.not.stringContaining('secret-pw') }) as Error,
    );
  });
});

describe('the header columns', () => {
  let client: pg.Client;
  beforeAll(async () => {
    client = new pg.Client({ connectionString: databaseUrl() });
    await client.connect();
  });
  afterAll(() => client.end());

  it("come in the order PostgreSQL's jsonb keeps an event's headers, for any header names", async () => {
    const headerName = fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9._-]{0,20}$/);
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(headerName, {
          maxLength: 6,
          selector: (name) => name.toLowerCase().replace(/[^a-z0-9]/g, '_'),
        }),
        async (extra) => {
          const headers = extra.filter(
            (name) => !['type', 'tenant', 'message_id', 'message-id'].includes(name.toLowerCase()),
          );
          let mapped: Array<[string, string]>;
          try {
            mapped = placement({ ...SHIPPED, headers });
          } catch (error) {
            // Only a clash with a standard header's column is refused.
            expect((error as Error).message).toMatch(/would share the column/);
            return;
          }
          const names = mapped.map(([, header]) => header);
          expect(new Set(names).size).toBe(names.length);
          for (const [column] of mapped) expect(column).toMatch(/^(header_[a-z0-9_]+|message_id)$/);
          const object = Object.fromEntries(names.map((name) => [name, 'v']));
          const { rows } = await client.query<{ key: string }>(
            'select jsonb_object_keys($1::jsonb) as key',
            [JSON.stringify(object)],
          );
          expect(names).toEqual(rows.map((row) => row.key));
        },
      ),
      { numRuns: fcRuns(40) },
    );
  });
});

describe('debeziumOutboxSchema', () => {
  const publication = `jo_dbz_test_${process.pid}_${Date.now()}`;
  let store: Awaited<ReturnType<typeof openTestStore>>;
  beforeAll(async () => {
    store = await openTestStore('postgres');
  });
  afterAll(async () => {
    await store.knex.raw(`drop publication if exists "${publication}"`);
    await store.dispose();
  });

  it('adds the columns, the trigger that fills them from what outbox.add writes, and the publication; again without harm', async () => {
    const options = { schema: store.schema, headers: ['x-source'], publication };
    for (let run = 0; run < 2; run++) {
      for (const statement of debeziumOutboxSchema(options)) await store.knex.raw(statement);
    }
    const outbox = createOutbox({ store });
    await store.knex.transaction(async (trx) => {
      await outbox.add(
        trx,
        [
          { destination: 't', key: 'k', payload: { a: 1 }, headers: { 'x-source': 'shop' } },
          { destination: 't', payload: 'text', messageId: 'plain' },
        ],
        { cause: { consumer: 'c', messageId: 'in-1', traceparent: 'tp', scope: 'acme' } },
      );
    });
    const { rows } = await store.knex.raw<{ rows: Array<Record<string, string | null>> }>(
      `select message_id, header_type, header_content_type, header_causation_id,
              header_correlation_id, header_traceparent, header_tracestate, header_tenant,
              header_x_source
         from ${store.names.table('outbox')} order by id`,
    );
    expect(rows[0]).toMatchObject({
      header_type: null,
      header_content_type: 'application/json',
      header_causation_id: 'in-1',
      header_correlation_id: 'in-1',
      header_traceparent: 'tp',
      header_tracestate: null,
      header_tenant: 'acme',
      header_x_source: 'shop',
    });
    expect(rows[1]).toMatchObject({ message_id: 'plain', header_content_type: null });
    const published = await store.knex.raw<{ rows: Array<Record<string, unknown>> }>(
      `select pubinsert, pubupdate, pubdelete, pubviaroot from pg_publication where pubname = ?`,
      [publication],
    );
    expect(published.rows).toEqual([
      { pubinsert: true, pubupdate: false, pubdelete: false, pubviaroot: true },
    ]);
    const tables = await store.knex.raw<{ rows: Array<{ tablename: string }> }>(
      'select schemaname, tablename from pg_publication_tables where pubname = ?',
      [publication],
    );
    expect(tables.rows).toEqual([{ schemaname: store.schema, tablename: 'outbox' }]);
  });

  it('refuses an unknown option', () => {
    expect(() => debeziumOutboxSchema({ schema: 'a', header: ['x'] } as never)).toThrow(
      /debeziumOutboxSchema: unknown option `header`; did you mean `headers`\?/,
    );
  });
});
