import { existsSync, promises as fs } from 'node:fs';
import path from 'node:path';
import { checkRabbitmq, type CheckResult } from './checks';
import { stopIfWeStarted, writeStartedNote } from './local-server';
import { LOGS_DIR, shown } from './paths';
import { findExecutable, logTail, runLogged, stopProcess } from './processes';
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

/** A RabbitMQ tool from RabbitMQ's own `bin` directory when there, else from the PATH. */
function rabbitmqTool(name: string): string | undefined {
  const own = path.join('/usr/lib/rabbitmq/bin', name);
  return existsSync(own) ? own : findExecutable(name, SERVER_DIRS);
}

/** A RabbitMQ node of its own, started by {@link startRabbitmqNode}. */
export interface RabbitmqNode {
  /** Its AMQP URL (guest/guest; the node accepts guest from anywhere on 127.0.0.1). */
  readonly url: string;
  /** Its Erlang node name, e.g. `jo-rabbitmq-1a2b3c4d@localhost`. */
  readonly nodeName: string;
  /** `rabbitmqctl stop_app`: the broker application stops, the Erlang node keeps running. */
  stopApp(): Promise<void>;
  /** `rabbitmqctl start_app`; resolves once an AMQP connection opens. */
  startApp(): Promise<void>;
  /** Stops the node (`rabbitmqctl stop`, SIGKILL if that fails) and removes its files. */
  dispose(): Promise<void>;
}

/**
 * Starts a separate RabbitMQ node with the machine's installation: its own node name, AMQP and
 * distribution ports (127.0.0.1), data, logs, Erlang cookie (`HOME`) and configuration, no
 * plugins and none of the system's `rabbitmq-env.conf`. Runs `rabbitmq-server` from
 * RabbitMQ's `bin` directory directly: the `/usr/sbin` wrapper switches to the `rabbitmq` user
 * and drops the environment. Resolves once the node accepts AMQP connections.
 */
export async function startRabbitmqNode(options: {
  nodeName: string;
  home: string;
  port: number;
  distPort: number;
  timeoutMs: number;
}): Promise<RabbitmqNode> {
  const server = rabbitmqTool('rabbitmq-server');
  const ctl = rabbitmqTool('rabbitmqctl');
  if (!server || !ctl) throw new Error('rabbitmq-server is not installed');
  const { home } = options;
  const logFile = path.join(home, 'commands.log');
  await fs.mkdir(path.join(home, 'cookie-home'), { recursive: true });
  await fs.writeFile(path.join(home, 'enabled_plugins'), '');
  await fs.writeFile(path.join(home, 'rabbitmq-env.conf'), '');
  await fs.writeFile(
    path.join(home, 'rabbitmq.conf'),
    `listeners.tcp.local = 127.0.0.1:${options.port}\nloopback_users = none\n`,
  );
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    HOME: path.join(home, 'cookie-home'),
    RABBITMQ_NODENAME: options.nodeName,
    RABBITMQ_NODE_PORT: String(options.port),
    RABBITMQ_DIST_PORT: String(options.distPort),
    RABBITMQ_MNESIA_BASE: path.join(home, 'mnesia'),
    RABBITMQ_LOG_BASE: path.join(home, 'log'),
    RABBITMQ_PID_FILE: path.join(home, 'pid'),
    RABBITMQ_ENABLED_PLUGINS_FILE: path.join(home, 'enabled_plugins'),
    RABBITMQ_CONFIG_FILE: path.join(home, 'rabbitmq.conf'),
    RABBITMQ_CONF_ENV_FILE: path.join(home, 'rabbitmq-env.conf'),
    ERL_EPMD_ADDRESS: '127.0.0.1',
    ERL_FLAGS: '-kernel inet_dist_use_interface {127,0,0,1}',
  };
  const url = `amqp://guest:guest@${HOST}:${options.port}`;
  const ctlRun = (args: string[], timeoutMs = 60_000) =>
    runLogged(ctl, ['-n', options.nodeName, ...args], logFile, { timeoutMs, env });
  const answering = (timeoutMs: number) =>
    pollUntil(async () => (await checkRabbitmq(url)).ok, { timeoutMs, intervalMs: 200 });
  const dispose = async () => {
    const text = await fs.readFile(path.join(home, 'pid'), 'utf8').catch(() => '');
    const pid = Number.parseInt(text, 10);
    await ctlRun(['stop'], 30_000).catch(() => undefined);
    if (pid > 0) await stopProcess(pid, 5000);
    await fs.rm(home, { recursive: true, force: true });
  };
  try {
    await runLogged(server, ['-detached'], logFile, { timeoutMs: options.timeoutMs, env });
    if (!(await answering(options.timeoutMs))) {
      throw new Error(
        `private RabbitMQ node ${options.nodeName} did not accept ${url} within ` +
          `${options.timeoutMs} ms; see ${shown(path.join(home, 'log'))}`,
      );
    }
  } catch (error) {
    await dispose();
    throw error;
  }
  return {
    url,
    nodeName: options.nodeName,
    stopApp: () => ctlRun(['stop_app']),
    startApp: async () => {
      await ctlRun(['start_app']);
      if (!(await answering(options.timeoutMs))) throw new Error(`${url} did not answer again`);
    },
    dispose,
  };
}
