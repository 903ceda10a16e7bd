import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { Client } from 'pg';
import { checkPostgres, type CheckResult } from './checks';
import { stopIfWeStarted, writeStartedNote } from './local-server';
import { LOGS_DIR, shown } from './paths';
import { findExecutable, logTail, runLogged } from './processes';
import { pollUntil, portAnswers } from './wait';

const run = promisify(execFile);

/** The local PostgreSQL server the tests use when `DATABASE_URL` is not set. */
export const POSTGRES_LOCAL_URL = 'postgres://postgres@127.0.0.1:5432/test';
const HOST = '127.0.0.1';
const PORT = 5432;

/** Where the output of our start and stop commands for PostgreSQL goes. */
export const POSTGRES_LOG = path.join(LOGS_DIR, 'postgres.log');

/** How to start the local PostgreSQL server, and to stop it again. */
interface Commands {
  start: string[];
  stop: string[];
}

/**
 * Finds how to start a stopped local server: a Debian/Ubuntu cluster on port 5432
 * (`pg_ctlcluster`), else `pg_ctl` on `$PGDATA`.
 */
async function startCommands(): Promise<Commands | undefined> {
  const lsclusters = findExecutable('pg_lsclusters');
  const ctlcluster = findExecutable('pg_ctlcluster');
  if (lsclusters && ctlcluster) {
    const { stdout } = await run(lsclusters, ['-h']);
    for (const line of stdout.split('\n')) {
      const [version, cluster, port] = line.trim().split(/\s+/);
      if (version && cluster && port === String(PORT)) {
        const base = [ctlcluster, '--skip-systemctl-redirect', version, cluster];
        return { start: [...base, 'start'], stop: [...base, 'stop', '-m', 'fast'] };
      }
    }
  }
  const pgData = process.env.PGDATA;
  const pgCtl = findExecutable('pg_ctl');
  if (pgData && pgCtl) {
    return {
      start: [pgCtl, '-D', pgData, '-l', POSTGRES_LOG, '-w', 'start'],
      stop: [pgCtl, '-D', pgData, '-m', 'fast', '-w', 'stop'],
    };
  }
  return undefined;
}

/** Creates the database named in `url` through the server's `postgres` database. */
export async function createDatabase(url: string): Promise<void> {
  const target = new URL(url);
  const name = decodeURIComponent(target.pathname.slice(1));
  const admin = new URL(url);
  admin.pathname = '/postgres';
  const client = new Client({ connectionString: admin.toString(), connectionTimeoutMillis: 3000 });
  await client.connect();
  try {
    await client.query(`create database "${name.replace(/"/g, '""')}"`);
  } catch (error) {
    // Another run created it at the same moment.
    if ((error as { code?: string }).code !== '42P04') throw error;
  } finally {
    await client.end();
  }
}

/**
 * Makes sure the local PostgreSQL server answers at {@link POSTGRES_LOCAL_URL}: reuses a
 * running server (creating the `test` database when it is missing) or starts a stopped local
 * cluster and notes that we did. Resolves whether it was `running` or `started`.
 */
export async function ensureLocalPostgres(timeoutMs: number): Promise<'running' | 'started'> {
  let source: 'running' | 'started' = 'running';
  if (!(await portAnswers(HOST, PORT))) {
    const commands = await startCommands();
    if (!commands) {
      throw new Error(
        `nothing answers on ${HOST}:${PORT} and no local cluster was found to start ` +
          '(looked for pg_lsclusters/pg_ctlcluster, and pg_ctl with $PGDATA)',
      );
    }
    const [command = '', ...args] = commands.start;
    try {
      await runLogged(command, args, POSTGRES_LOG, { timeoutMs });
    } catch (error) {
      throw new Error(
        `\`${commands.start.join(' ')}\` failed (${(error as Error).message}); ` +
          `see ${shown(POSTGRES_LOG)}:\n${await logTail(POSTGRES_LOG)}`,
      );
    }
    await writeStartedNote('postgres', commands.stop);
    source = 'started';
  }
  // A server that was already running gets a short grace (it may be finishing its start-up);
  // one we just started gets the full timeout.
  let last: CheckResult = { ok: false, reason: 'not checked' };
  const ready = await pollUntil(
    async () => {
      last = await checkPostgres(POSTGRES_LOCAL_URL);
      if (!last.ok && last.code === '3D000') {
        await createDatabase(POSTGRES_LOCAL_URL);
        last = await checkPostgres(POSTGRES_LOCAL_URL);
      }
      return last.ok;
    },
    { timeoutMs: source === 'running' ? 5000 : timeoutMs, intervalMs: 300 },
  );
  if (!ready) {
    const reason = last.ok ? '' : last.reason;
    throw new Error(
      `PostgreSQL on ${HOST}:${PORT} does not accept ${POSTGRES_LOCAL_URL}: ${reason}`,
    );
  }
  return source;
}

/** Stops the local PostgreSQL server if, and only if, {@link ensureLocalPostgres} started it. */
export function stopLocalPostgres(): Promise<boolean> {
  return stopIfWeStarted('postgres', POSTGRES_LOG);
}
