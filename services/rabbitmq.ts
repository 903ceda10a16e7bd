import path from 'node:path';
import { checkRabbitmq, type CheckResult } from './checks';
import { stopIfWeStarted, writeStartedNote } from './local-server';
import { LOGS_DIR, shown } from './paths';
import { findExecutable, logTail, runLogged } from './processes';
import { pollUntil, portAnswers } from './wait';

/** The local RabbitMQ server the tests use when `AMQP_URL` is not set. */
export const RABBITMQ_LOCAL_URL = 'amqp://guest:guest@127.0.0.1:5672';
const HOST = '127.0.0.1';
const PORT = 5672;

/** Where the output of our start and stop commands for RabbitMQ goes. */
export const RABBITMQ_LOG = path.join(LOGS_DIR, 'rabbitmq.log');

const SERVER_DIRS = ['/usr/sbin', '/usr/lib/rabbitmq/bin', '/usr/local/sbin', '/opt/homebrew/sbin'];

/**
 * Makes sure the local RabbitMQ server answers at {@link RABBITMQ_LOCAL_URL}: reuses a running
 * server, or starts it with `rabbitmq-server -detached` and notes that we did. Resolves whether
 * it was `running` or `started`.
 */
export async function ensureLocalRabbitmq(timeoutMs: number): Promise<'running' | 'started'> {
  let source: 'running' | 'started' = 'running';
  if (!(await portAnswers(HOST, PORT))) {
    const server = findExecutable('rabbitmq-server', SERVER_DIRS);
    const ctl = findExecutable('rabbitmqctl', SERVER_DIRS);
    if (!server || !ctl) {
      throw new Error(`nothing answers on ${HOST}:${PORT} and rabbitmq-server is not installed`);
    }
    try {
      await runLogged(server, ['-detached'], RABBITMQ_LOG, { timeoutMs });
    } catch (error) {
      throw new Error(
        `\`rabbitmq-server -detached\` failed (${(error as Error).message}); ` +
          `see ${shown(RABBITMQ_LOG)}:\n${await logTail(RABBITMQ_LOG)}`,
      );
    }
    await writeStartedNote('rabbitmq', [ctl, 'stop']);
    source = 'started';
  }
  // A server that was already running gets a short grace (it may be finishing its start-up);
  // one we just started gets the full timeout.
  let last: CheckResult = { ok: false, reason: 'not checked' };
  const ready = await pollUntil(
    async () => {
      last = await checkRabbitmq(RABBITMQ_LOCAL_URL);
      return last.ok;
    },
    { timeoutMs: source === 'running' ? 5000 : timeoutMs, intervalMs: 500 },
  );
  if (!ready) {
    const reason = last.ok ? '' : last.reason;
    throw new Error(
      `RabbitMQ on ${HOST}:${PORT} does not accept ${RABBITMQ_LOCAL_URL}: ${reason}. ` +
        `Its server log is in RabbitMQ's log directory; our start output is in ${shown(RABBITMQ_LOG)}`,
    );
  }
  return source;
}

/** Stops the local RabbitMQ server if, and only if, {@link ensureLocalRabbitmq} started it. */
export function stopLocalRabbitmq(): Promise<boolean> {
  return stopIfWeStarted('rabbitmq', RABBITMQ_LOG);
}
