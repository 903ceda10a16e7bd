import path from 'node:path';
import { checkMysql, type CheckResult } from './checks';
import { stopIfWeStarted, writeStartedNote } from './local-server';
import { LOGS_DIR, shown } from './paths';
import { findExecutable, logTail, runLogged } from './processes';
import { pollUntil, portAnswers } from './wait';

/** The local MySQL or MariaDB server the tests use when `MYSQL_URL` is not set. */
export const MYSQL_LOCAL_URL = 'mysql://root@127.0.0.1:3306/test';
const HOST = '127.0.0.1';
const PORT = 3306;

/** Where the output of our start and stop commands for MySQL/MariaDB goes. */
export const MYSQL_LOG = path.join(LOGS_DIR, 'mysql.log');

const SERVER_DIRS = ['/usr/sbin', '/usr/local/sbin', '/usr/local/mysql/bin', '/opt/homebrew/bin'];

/**
 * How to start a stopped local server: Debian's MariaDB or MySQL daemon in the background
 * through `start-stop-daemon` (what the distribution's own init script does), stopped again
 * with `mysqladmin shutdown`.
 */
function startCommands(): { start: string[]; stop: string[] } | undefined {
  const daemon = findExecutable('mariadbd', SERVER_DIRS) ?? findExecutable('mysqld', SERVER_DIRS);
  const ssd = findExecutable('start-stop-daemon', ['/sbin', '/usr/sbin']);
  const admin = findExecutable('mariadb-admin') ?? findExecutable('mysqladmin');
  if (!daemon || !ssd || !admin) return undefined;
  return {
    start: [ssd, '--start', '--oknodo', '--background', '--exec', daemon],
    stop: [admin, '-h', HOST, '-u', 'root', 'shutdown'],
  };
}

/**
 * Makes sure the local MySQL/MariaDB server answers at {@link MYSQL_LOCAL_URL}: reuses a
 * running server (the check creates the `test` database when it is missing) or starts a
 * stopped local daemon and notes that we did. Resolves whether it was `running` or `started`.
 */
export async function ensureLocalMysql(timeoutMs: number): Promise<'running' | 'started'> {
  let source: 'running' | 'started' = 'running';
  if (!(await portAnswers(HOST, PORT))) {
    const commands = startCommands();
    if (!commands) {
      throw new Error(
        `nothing answers on ${HOST}:${PORT} and no local MariaDB or MySQL daemon was found to start`,
      );
    }
    const [command = '', ...args] = commands.start;
    try {
      await runLogged(command, args, MYSQL_LOG, { timeoutMs });
    } catch (error) {
      throw new Error(
        `\`${commands.start.join(' ')}\` failed (${(error as Error).message}); ` +
          `see ${shown(MYSQL_LOG)}:\n${await logTail(MYSQL_LOG)}`,
      );
    }
    await writeStartedNote('mysql', commands.stop);
    source = 'started';
  }
  let last: CheckResult = { ok: false, reason: 'not checked' };
  const ready = await pollUntil(
    async () => {
      last = await checkMysql(MYSQL_LOCAL_URL);
      return last.ok;
    },
    { timeoutMs: source === 'running' ? 5000 : timeoutMs, intervalMs: 300 },
  );
  if (!ready) {
    const reason = last.ok ? '' : last.reason;
    throw new Error(
      `MySQL/MariaDB on ${HOST}:${PORT} does not accept ${MYSQL_LOCAL_URL}: ${reason}`,
    );
  }
  return source;
}

/** Stops the local server if, and only if, {@link ensureLocalMysql} started it. */
export function stopLocalMysql(): Promise<boolean> {
  return stopIfWeStarted('mysql', MYSQL_LOG);
}
