/**
 * The PostgreSQL that logical decoding can read (`wal_level = logical`): the log relay's and
 * Debezium's tests run against it, while the machine's main server keeps its own settings.
 * `pnpm services:up` starts it from the machine's binaries, a cluster of our own under
 * `.services/postgres-logical` on port 35432, and `services:down` stops it again.
 */
import { existsSync, promises as fs } from 'node:fs';
import path from 'node:path';
import { Client } from 'pg';
import { checkPostgres, type CheckResult } from './checks';
import { clearStartedNote, stopIfWeStarted, writeStartedNote } from './local-server';
import { LOGS_DIR, SERVICES_DIR, shown } from './paths';
import { createDatabase } from './postgres';
import {
  clusterUnavailable,
  dataDirOf,
  initCluster,
  LOGICAL_SETTINGS,
  postgresBinDir,
  startCluster,
  stopCommand,
  type ClusterSpec,
} from './postgres-cluster';
import { logTail } from './processes';
import { pollUntil, portAnswers } from './wait';

const HOST = '127.0.0.1';
/** The port of the logical-replication cluster. */
export const POSTGRES_LOGICAL_PORT = 35432;
/** Its address when `LOGICAL_DATABASE_URL` is not set. */
export const POSTGRES_LOGICAL_LOCAL_URL = `postgres://postgres@${HOST}:${POSTGRES_LOGICAL_PORT}/test`;
const ROOT = path.join(SERVICES_DIR, 'postgres-logical');
/** The cluster's server log. */
export const POSTGRES_LOGICAL_LOG = path.join(ROOT, 'server.log');
const COMMAND_LOG = path.join(LOGS_DIR, 'postgres-logical.log');

/**
 * Connects and checks that the server decodes logical replication: `wal_level` must be
 * `logical`, or no slot can be created there.
 */
export async function checkLogicalPostgres(url: string): Promise<CheckResult> {
  const reachable = await checkPostgres(url);
  if (!reachable.ok) return reachable;
  const client = new Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  client.on('error', () => undefined);
  try {
    await client.connect();
    const { rows } = await client.query<{ wal_level: string }>('show wal_level');
    const level = rows[0]?.wal_level;
    return level === 'logical'
      ? { ok: true }
      : { ok: false, reason: `wal_level is '${level}', not 'logical'` };
  } catch (error) {
    return { ok: false, reason: (error as Error).message };
  } finally {
    await client.end().catch(() => undefined);
  }
}

function spec(): ClusterSpec | undefined {
  const bin = postgresBinDir();
  if (bin === undefined) return undefined;
  return { bin, root: ROOT, port: POSTGRES_LOGICAL_PORT, settings: LOGICAL_SETTINGS };
}

/** Creates the cluster once (kept between runs, like Kafka's data) and starts it. */
async function startOwnCluster(cluster: ClusterSpec): Promise<void> {
  await fs.mkdir(ROOT, { recursive: true });
  if (!existsSync(path.join(dataDirOf(cluster), 'PG_VERSION'))) {
    await fs.rm(dataDirOf(cluster), { recursive: true, force: true });
    await initCluster(cluster);
  }
  try {
    await startCluster(cluster);
  } catch (error) {
    const log = existsSync(POSTGRES_LOGICAL_LOG) ? await logTail(POSTGRES_LOGICAL_LOG) : '';
    throw new Error(`${(error as Error).message}\n${shown(POSTGRES_LOGICAL_LOG)}:\n${log}`);
  }
  await writeStartedNote('postgres-logical', stopCommand(cluster));
}

/**
 * Makes sure the logical-replication cluster answers at {@link POSTGRES_LOGICAL_LOCAL_URL}:
 * reuses a running one or starts (first creating) ours. Resolves whether it was `running` or
 * `started`.
 */
export async function ensureLogicalPostgres(timeoutMs: number): Promise<'running' | 'started'> {
  let source: 'running' | 'started' = 'running';
  if (!(await portAnswers(HOST, POSTGRES_LOGICAL_PORT))) {
    const cluster = spec();
    const unavailable = clusterUnavailable();
    if (!cluster || unavailable !== undefined) {
      throw new Error(`cannot start a cluster of our own: ${unavailable ?? 'no binaries'}`);
    }
    await startOwnCluster(cluster);
    source = 'started';
  }
  let last: CheckResult = { ok: false, reason: 'not checked' };
  const ready = await pollUntil(
    async () => {
      last = await checkLogicalPostgres(POSTGRES_LOGICAL_LOCAL_URL);
      if (!last.ok && last.code === '3D000') {
        await createDatabase(POSTGRES_LOGICAL_LOCAL_URL);
        last = await checkLogicalPostgres(POSTGRES_LOGICAL_LOCAL_URL);
      }
      return last.ok;
    },
    { timeoutMs: source === 'running' ? 5000 : timeoutMs, intervalMs: 300 },
  );
  if (!ready) {
    const reason = last.ok ? '' : last.reason;
    throw new Error(`PostgreSQL on ${HOST}:${POSTGRES_LOGICAL_PORT}: ${reason}`);
  }
  return source;
}

/** Stops the logical-replication cluster if, and only if, {@link ensureLogicalPostgres} started it. */
export async function stopLogicalPostgres(): Promise<boolean> {
  // A cluster that already stopped (killed, or stopped by hand) leaves only the note.
  if (!(await portAnswers(HOST, POSTGRES_LOGICAL_PORT))) {
    await clearStartedNote('postgres-logical');
    return false;
  }
  return stopIfWeStarted('postgres-logical', COMMAND_LOG);
}
