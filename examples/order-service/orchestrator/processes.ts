/**
 * The four service processes: started through tsx with the run's environment, each one's
 * output appended to a log file, killed with SIGKILL on purpose and started again. A process
 * that exits when nobody killed it is counted and started again too (and the run fails).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, mkdirSync, type WriteStream } from 'node:fs';
import path from 'node:path';
import { READY_PREFIX } from '../service-process';
import type { ServiceName } from '../config';

/** The repository root: tsx finds the workspace's path mapping in its tsconfig there. */
const ROOT = path.resolve(__dirname, '..', '..', '..');
const READY_TIMEOUT_MS = 60_000;
const STOP_TIMEOUT_MS = 15_000;

interface Running {
  readonly child: ChildProcess;
  readonly closed: Promise<void>;
  /** Set when we kill or stop it: its exit is then expected. */
  expected: boolean;
}

/** The running services. */
export interface ServiceProcesses {
  /** Starts a service and resolves once it printed its ready line. */
  start(name: ServiceName): Promise<void>;
  /** Kills a service with SIGKILL and resolves once it is gone. */
  kill(name: ServiceName): Promise<void>;
  /** Stops every service with SIGTERM (SIGKILL after 15 s). */
  stopAll(): Promise<void>;
  /** Exits nobody asked for, per service. */
  unexpectedExits(): Readonly<Record<ServiceName, number>>;
  /** Where each service's output goes: `<logDir>/<service>.log`. */
  readonly logDir: string;
}

/** Each service's process entry: its `main.ts`, unless `entries` names another file. */
function entryOf(name: ServiceName, entries: ServiceEntries): string {
  return entries[name] ?? path.join(__dirname, '..', name, 'main.ts');
}

/**
 * Other process entries for some services, by absolute path: a file that runs
 * `serviceMain(<service>, …)` with the same configuration, such as examples/nestjs-orders/main.ts.
 */
export type ServiceEntries = Partial<Record<ServiceName, string>>;

/** Manages the services of one run. */
export function serviceProcesses(
  env: Record<string, string>,
  logDir: string,
  entries: ServiceEntries = {},
): ServiceProcesses {
  mkdirSync(logDir, { recursive: true });
  const running = new Map<ServiceName, Running>();
  const logs = new Map<ServiceName, WriteStream>();
  const unexpected: Record<ServiceName, number> = {
    orders: 0,
    payments: 0,
    shipping: 0,
    provider: 0,
  };
  let shuttingDown = false;

  const logOf = (name: ServiceName): WriteStream => {
    let log = logs.get(name);
    if (log === undefined) {
      log = createWriteStream(path.join(logDir, `${name}.log`), { flags: 'a' });
      logs.set(name, log);
    }
    return log;
  };

  const start = (name: ServiceName): Promise<void> => {
    const log = logOf(name);
    log.write(`--- ${new Date().toISOString()} starting ${name}\n`);
    const child = spawn(process.execPath, ['--import', 'tsx', entryOf(name, entries)], {
      cwd: ROOT,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const closed = new Promise<void>((resolve) => child.once('close', () => resolve()));
    const state: Running = { child, closed, expected: false };
    running.set(name, state);
    child.stderr?.pipe(log, { end: false });
    const ready = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`${name} was not ready within ${READY_TIMEOUT_MS} ms`)),
        READY_TIMEOUT_MS,
      );
      let buffered = '';
      child.stdout?.on('data', (chunk: Buffer) => {
        log.write(chunk);
        buffered += chunk.toString();
        if (buffered.split('\n').some((line) => line.startsWith(READY_PREFIX))) {
          clearTimeout(timer);
          resolve();
        }
      });
      child.once('close', (code, signal) => {
        clearTimeout(timer);
        log.write(`--- ${name} exited (${signal ?? `code ${code}`})\n`);
        reject(new Error(`${name} exited before it was ready; see ${log.path}`));
      });
    });
    void closed.then(() => {
      if (state.expected || shuttingDown || running.get(name) !== state) return;
      // Nobody killed it: a bug, counted and reported; start it again so the run can finish.
      unexpected[name] += 1;
      running.delete(name);
      setTimeout(() => {
        if (!shuttingDown) void start(name).catch(() => undefined);
      }, 500);
    });
    return ready;
  };

  const kill = async (name: ServiceName): Promise<void> => {
    const state = running.get(name);
    if (state === undefined) return;
    state.expected = true;
    running.delete(name);
    state.child.kill('SIGKILL');
    await state.closed;
  };

  // Never leave a service behind when the orchestrator itself ends.
  const killAll = (): void => {
    for (const state of running.values()) state.child.kill('SIGKILL');
  };
  process.once('exit', killAll);

  const stopAll = async (): Promise<void> => {
    shuttingDown = true;
    process.off('exit', killAll);
    await Promise.all(
      [...running.entries()].map(async ([name, state]) => {
        state.expected = true;
        running.delete(name);
        state.child.kill('SIGTERM');
        const timer = setTimeout(() => state.child.kill('SIGKILL'), STOP_TIMEOUT_MS);
        await state.closed;
        clearTimeout(timer);
      }),
    );
    const open = [...logs.values()];
    logs.clear();
    await Promise.all(open.map((log) => new Promise<void>((resolve) => log.end(() => resolve()))));
  };

  return { start, kill, stopAll, unexpectedExits: () => ({ ...unexpected }), logDir };
}
