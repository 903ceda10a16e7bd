import { execFile, spawn } from 'node:child_process';
import { existsSync, openSync, closeSync, promises as fs } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { SERVICES_DIR } from './paths';
import { pollUntil } from './wait';

const run = promisify(execFile);

/** True when a process with this id exists (it may belong to another user). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * The JVM system property that marks a Java process as launched from this checkout, so that
 * `services:down` and `services:status` find exactly our processes and never anyone else's.
 */
export function markerArgs(service: string): string[] {
  return [`-Djustonce.service=${service}`, `-Djustonce.services.dir=${SERVICES_DIR}`];
}

/** A Java process launched by this checkout, found by its marker. */
export interface OwnProcess {
  /** Process id. */
  pid: number;
  /** The service named in its marker. */
  service: string;
}

/**
 * Lists the running processes that carry this checkout's marker (see {@link markerArgs}).
 * Uses `ps`; where `ps` is missing, falls back to the pid files under `.services/`.
 */
export async function ownProcesses(): Promise<OwnProcess[]> {
  const dirMarker = `-Djustonce.services.dir=${SERVICES_DIR}`;
  try {
    const { stdout } = await run('ps', ['-A', '-ww', '-o', 'pid=,args='], {
      maxBuffer: 16 * 1024 * 1024,
    });
    const found: OwnProcess[] = [];
    for (const line of stdout.split('\n')) {
      const match = /^\s*(\d+)\s+(.*)$/.exec(line);
      const args = match?.[2];
      if (!match || !args || !`${args} `.includes(`${dirMarker} `)) continue;
      const service = /-Djustonce\.service=(\S+)/.exec(args)?.[1] ?? 'unknown';
      found.push({ pid: Number(match[1]), service });
    }
    return found;
  } catch {
    const found: OwnProcess[] = [];
    for (const service of ['kafka', 'elasticmq', 'connect']) {
      const pid = await readPid(service);
      if (pid !== undefined) found.push({ pid, service });
    }
    return found;
  }
}

function pidFile(service: string): string {
  return path.join(SERVICES_DIR, service, 'pid');
}

/** The pid recorded for a service we launched, if that process is still alive. */
export async function readPid(service: string): Promise<number | undefined> {
  const text = await fs.readFile(pidFile(service), 'utf8').catch(() => '');
  const pid = Number.parseInt(text, 10);
  return pid > 0 && isAlive(pid) ? pid : undefined;
}

/** A daemon started by {@link startDaemon}. */
export interface Daemon {
  /** Its process id. */
  pid: number;
  /** The reason it stopped, once it has (for early-exit detection while waiting). */
  exited(): Error | undefined;
}

/**
 * Starts a long-lived process detached from this one (it outlives `pnpm test`), with stdout
 * and stderr appended to `logFile`, and records its pid under `.services/<service>/pid`.
 */
export async function startDaemon(options: {
  service: string;
  command: string;
  args: string[];
  cwd: string;
  logFile: string;
}): Promise<Daemon> {
  await fs.mkdir(path.dirname(options.logFile), { recursive: true });
  const fd = openSync(options.logFile, 'a');
  let stopped: Error | undefined;
  try {
    const child = spawn(options.command, options.args, {
      cwd: options.cwd,
      detached: true,
      stdio: ['ignore', fd, fd],
    });
    child.once('error', (error) => {
      stopped = error;
    });
    child.once('exit', (code, signal) => {
      stopped = new Error(`exited early with ${signal ?? `code ${code}`}`);
    });
    child.unref();
    if (child.pid === undefined) {
      await new Promise((resolve) => setImmediate(resolve));
      throw stopped ?? new Error(`could not start ${options.command}`);
    }
    await fs.mkdir(path.dirname(pidFile(options.service)), { recursive: true });
    await fs.writeFile(pidFile(options.service), `${child.pid}\n`);
    return { pid: child.pid, exited: () => stopped };
  } finally {
    closeSync(fd);
  }
}

/**
 * Stops a process: SIGTERM, then SIGKILL if it is still alive after `graceMs`. Resolves once
 * it is gone.
 */
export async function stopProcess(pid: number, graceMs = 30_000): Promise<void> {
  if (!isAlive(pid)) return;
  try {
    process.kill(pid, 'SIGTERM');
  } catch {
    return;
  }
  const gone = await pollUntil(async () => !isAlive(pid), { timeoutMs: graceMs, intervalMs: 200 });
  if (gone) return;
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    return;
  }
  await pollUntil(async () => !isAlive(pid), { timeoutMs: 10_000, intervalMs: 100 });
}

/** Forgets the pid file of a service. */
export async function clearPid(service: string): Promise<void> {
  await fs.rm(pidFile(service), { force: true });
}

/** The last `lines` lines of a log file, indented, for error messages. */
export async function logTail(file: string, lines = 15): Promise<string> {
  if (!existsSync(file)) return '';
  const text = await fs.readFile(file, 'utf8');
  const tail = text.trimEnd().split('\n').slice(-lines);
  return tail.map((line) => `    ${line}`).join('\n');
}

/**
 * Finds an executable on the PATH or in `extraDirs` (server tools often live in `sbin` or a
 * versioned directory outside the PATH).
 */
export function findExecutable(name: string, extraDirs: string[] = []): string | undefined {
  const dirs = [...(process.env.PATH ?? '').split(path.delimiter), ...extraDirs];
  for (const dir of dirs) {
    if (!dir) continue;
    const candidate = path.join(dir, name);
    if (existsSync(candidate)) return candidate;
  }
  return undefined;
}

/** Runs a command to completion with its output appended to `logFile`; throws on failure. */
export async function runLogged(
  command: string,
  args: string[],
  logFile: string,
  options: { cwd?: string; timeoutMs?: number; env?: NodeJS.ProcessEnv } = {},
): Promise<void> {
  await fs.mkdir(path.dirname(logFile), { recursive: true });
  const fd = openSync(logFile, 'a');
  try {
    await new Promise<void>((resolve, reject) => {
      const child = spawn(command, args, {
        cwd: options.cwd,
        env: options.env ?? process.env,
        stdio: ['ignore', fd, fd],
      });
      const timer = setTimeout(
        () => {
          child.kill('SIGKILL');
          reject(new Error(`${command} did not finish within ${options.timeoutMs} ms`));
        },
        options.timeoutMs ?? 10 * 60_000,
      );
      child.once('error', (error) => {
        clearTimeout(timer);
        reject(error);
      });
      child.once('exit', (code, signal) => {
        clearTimeout(timer);
        if (code === 0) resolve();
        else
          reject(new Error(`${command} ${args[0] ?? ''} failed with ${signal ?? `code ${code}`}`));
      });
    });
  } finally {
    closeSync(fd);
  }
}
