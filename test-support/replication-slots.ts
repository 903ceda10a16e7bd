/**
 * Logical replication slots for tests, on the logical-replication PostgreSQL
 * (`LOGICAL_DATABASE_URL`, `wal_level=logical`): a slot on a table and publication of its own,
 * WAL written to make it lag, and a reader that holds it active (`pg_recvlogical` on the
 * `pgoutput` plugin, a child process). Every name is unique per fixture; `dispose` stops the
 * reader and drops the slot, the publication and the table, since a slot left behind keeps
 * WAL on a shared server.
 *
 * ```ts
 * const slot = await createSlotFixture('cli_drop');
 * await slot.writeWal(500);
 * const reader = await slot.hold(); // the slot is active until reader.stop()
 * await slot.dispose();
 * ```
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from 'pg';
import { postgresBinDir } from './private-postgres';
import { logicalDatabaseUrl } from './services';
import { waitFor } from './wait-for';

/** The `pg_recvlogical` binary: `PG_RECVLOGICAL`, else the machine's PostgreSQL's. */
function recvLogical(): string {
  const given = process.env['PG_RECVLOGICAL'];
  if (given !== undefined && given !== '') return given;
  const dir = postgresBinDir();
  const bin = dir === undefined ? undefined : join(dir, 'pg_recvlogical');
  if (bin === undefined || !existsSync(bin)) {
    throw new Error('no pg_recvlogical under /usr/lib/postgresql/*/bin: set PG_RECVLOGICAL');
  }
  return bin;
}

/** A connection reading a slot. */
export interface SlotReader {
  /** The reader's process id (not the walsender's). */
  readonly pid: number;
  /** Stops the reader (SIGTERM) and waits until the slot is inactive again. */
  stop(): Promise<void>;
}

/** A logical slot with its own table and publication. */
export interface SlotFixture {
  /** The slot's name (also the table's and the publication's stem). */
  readonly name: string;
  /** The server's URL. */
  readonly url: string;
  /** Runs SQL on the fixture's own connection. */
  query<T = Record<string, unknown>>(sql: string, values?: readonly unknown[]): Promise<T[]>;
  /** Inserts `rows` rows of 200 bytes into the slot's table: WAL the slot has not confirmed. */
  writeWal(rows: number): Promise<void>;
  /** Starts `pg_recvlogical` on the slot; resolves once the slot is active. */
  hold(): Promise<SlotReader>;
  /** Whether the slot exists. */
  exists(): Promise<boolean>;
  /** Stops any reader, drops the slot (if still there), the publication and the table. */
  dispose(): Promise<void>;
}

/** `<prefix>_<random>`: a slot, table and publication name nobody else uses. */
export function uniqueSlotName(prefix: string): string {
  return `${prefix}_${randomBytes(5).toString('hex')}`;
}

function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  const gone = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  return gone;
}

/** Creates a `pgoutput` slot `<prefix>_<random>` on a new table and publication. */
export async function createSlotFixture(
  prefix: string,
  url = logicalDatabaseUrl(),
): Promise<SlotFixture> {
  const name = uniqueSlotName(prefix);
  const client = new Client({ connectionString: url });
  await client.connect();
  const readers = new Set<ChildProcess>();
  const query = async <T>(sql: string, values: readonly unknown[] = []): Promise<T[]> =>
    (await client.query(sql, [...values])).rows as T[];
  const active = async (): Promise<boolean | undefined> =>
    (
      await query<{ active: boolean }>(
        'select active from pg_replication_slots where slot_name = $1',
        [name],
      )
    )[0]?.active;
  await query(`create table ${name} (id bigserial primary key, v text not null)`);
  await query(`create publication ${name} for table ${name}`);
  await query(`select pg_create_logical_replication_slot($1, 'pgoutput')`, [name]);
  return {
    name,
    url,
    query,
    async writeWal(rows) {
      await query(`insert into ${name} (v) select repeat('x', 200) from generate_series(1, $1)`, [
        rows,
      ]);
    },
    async hold() {
      const child = spawn(
        recvLogical(),
        ['--start', '-S', name, '-d', url, '-f', '/dev/null', '-s', '1', '-F', '1']
          .concat(['-o', 'proto_version=1', '-o', `publication_names=${name}`])
          .concat(['--no-loop']),
        { stdio: ['ignore', 'ignore', 'pipe'] },
      );
      readers.add(child);
      let stderr = '';
      child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      await waitFor(`pg_recvlogical reading slot ${name}`, async () => {
        if (child.exitCode !== null) throw new Error(`pg_recvlogical exited: ${stderr}`);
        return active();
      });
      return {
        pid: child.pid!,
        async stop() {
          await stopChild(child);
          readers.delete(child);
          await waitFor(`slot ${name} released`, async () => (await active()) === false);
        },
      };
    },
    exists: async () => (await active()) !== undefined,
    async dispose() {
      for (const child of readers) await stopChild(child);
      readers.clear();
      try {
        await waitFor(`slot ${name} released`, async () => (await active()) !== true);
        await query(
          'select pg_drop_replication_slot(slot_name) from pg_replication_slots where slot_name = $1',
          [name],
        );
        await query(`drop publication if exists ${name}`);
        await query(`drop table if exists ${name}`);
      } finally {
        await client.end();
      }
    },
  };
}
