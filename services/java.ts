import { existsSync, promises as fs } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { CheckResult } from './checks';
import { SERVICES_DIR, shown } from './paths';
import {
  clearPid,
  findExecutable,
  logTail,
  markerArgs,
  readPid,
  startDaemon,
  stopProcess,
} from './processes';

/** The `java` to launch: `$JAVA_HOME/bin/java`, else the one on the PATH. */
export function javaExecutable(): string {
  const fromHome = process.env.JAVA_HOME && path.join(process.env.JAVA_HOME, 'bin', 'java');
  const java = fromHome && existsSync(fromHome) ? fromHome : findExecutable('java');
  if (!java) {
    throw new Error(
      'Java is not installed; the native Kafka and ElasticMQ launchers need Java 17 or newer ' +
        '(e.g. `apt-get install openjdk-17-jre-headless`).',
    );
  }
  return java;
}

/** What {@link launchJava} needs to start one Java service and know it is ready. */
export interface JavaLaunch {
  /** Service name, used for the marker, the pid file and messages. */
  service: string;
  /** Human name for messages, e.g. "Kafka". */
  label: string;
  /** Where it answers, for messages. */
  address: string;
  /** JVM options (heap, GC) placed before the marker and the class path. */
  jvmOptions: string[];
  /** The directory of its jars. */
  libDir: string;
  /** Main class and its arguments. */
  main: string[];
  /** Working directory. */
  cwd: string;
  /** Log file receiving stdout and stderr. */
  logFile: string;
  /** Readiness check. */
  check: () => Promise<CheckResult>;
  /** Upper bound for readiness. */
  timeoutMs: number;
}

/**
 * Starts a Java service detached and waits until `check` passes. Fails fast, naming the log
 * file and quoting its end, when the process exits or the deadline passes. A process that
 * exits because another launcher bound the port first counts as success if the port then
 * answers the check.
 */
export async function launchJava(launch: JavaLaunch): Promise<void> {
  const daemon = await startDaemon({
    service: launch.service,
    command: javaExecutable(),
    args: [
      ...markerArgs(launch.service),
      ...launch.jvmOptions,
      '-cp',
      path.join(launch.libDir, '*'),
      ...launch.main,
    ],
    cwd: launch.cwd,
    logFile: launch.logFile,
  });
  const deadline = Date.now() + launch.timeoutMs;
  let last: CheckResult = { ok: false, reason: 'not checked yet' };
  for (;;) {
    last = await launch.check();
    if (last.ok) return;
    const exit = daemon.exited();
    if (exit) {
      last = await launch.check();
      if (last.ok) return;
      await clearPid(launch.service);
      throw new Error(
        `${launch.label} ${exit.message} before answering on ${launch.address}. ` +
          `See ${shown(launch.logFile)}:\n${await logTail(launch.logFile)}`,
      );
    }
    if (Date.now() > deadline) {
      await stopProcess(daemon.pid, 5000);
      await clearPid(launch.service);
      throw new Error(
        `${launch.label} did not answer on ${launch.address} within ` +
          `${Math.round(launch.timeoutMs / 1000)} s (last check: ${last.reason}). ` +
          `See ${shown(launch.logFile)}:\n${await logTail(launch.logFile)}`,
      );
    }
    await sleep(300);
  }
}

/**
 * Stops the process recorded in the service's pid file, if it is alive. Used before a fresh
 * start, when a previous launch left a process that does not answer.
 */
export async function stopRecorded(service: string, graceMs = 30_000): Promise<boolean> {
  const pid = await readPid(service);
  if (pid !== undefined) await stopProcess(pid, graceMs);
  await clearPid(service);
  return pid !== undefined;
}

/** Empties a log file so that it holds only the coming run. */
export async function freshLog(logFile: string): Promise<void> {
  await fs.mkdir(path.dirname(logFile), { recursive: true });
  await fs.writeFile(logFile, '');
}

function versionFile(service: string): string {
  return path.join(SERVICES_DIR, service, 'version');
}

/** Notes which version a freshly started Java service runs, for `services:status`. */
export async function recordVersion(service: string, version: string): Promise<void> {
  await fs.writeFile(versionFile(service), `${version}\n`);
}

/** The version noted by {@link recordVersion}, if any. */
export async function recordedVersion(service: string): Promise<string | undefined> {
  const text = await fs.readFile(versionFile(service), 'utf8').catch(() => '');
  return text.trim() || undefined;
}
