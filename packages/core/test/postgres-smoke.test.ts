import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { databaseUrl } from '../../../test-support/services';

describe('PostgreSQL service (smoke)', () => {
  const client = new Client({ connectionString: databaseUrl() });
  const table = `smoke_${randomBytes(5).toString('hex')}`;

  beforeAll(async () => {
    await client.connect();
  });

  afterAll(async () => {
    await client.query(`drop table if exists ${table}`);
    await client.end();
  });

  it('answers as a PostgreSQL server over TCP', async () => {
    const { rows } = await client.query<{ version: string; port: number | null }>(
      'select version() as version, inet_server_port() as port',
    );
    expect(rows[0]?.version).toMatch(/^PostgreSQL \d+/);
    // A TCP connection (not a Unix socket nor an embedded database) has a server port.
    expect(rows[0]?.port).toBeGreaterThan(0);
  });

  it('writes and reads back a row in a transaction', async () => {
    await client.query(`create table ${table} (id int primary key, note text not null)`);
    await client.query('begin');
    await client.query(`insert into ${table} values ($1, $2)`, [1, 'reached']);
    await client.query('commit');
    const { rows } = await client.query(`select id, note from ${table}`);
    expect(rows).toEqual([{ id: 1, note: 'reached' }]);
  });
});
