/**
 * The crash tests' child processes, the part every kind shares. A kind of child is a module
 * holding both halves, made with {@link childModule}: the parent spawns the module through tsx
 * with a job (plain data: it travels as JSON in an environment variable) and reads the reports
 * the child writes on stdout, one JSON line each; once the child reported that it stopped
 * where it was told, the parent kills it there with SIGKILL, the way a crash or an OOM kill
 * would. The kinds: the inbox consumers of `crash-child.ts`, the HTTP server of
 * `crash-matrix/http-child.ts`, and the core tests' `fixtures/operation-crash-child.ts`.
 *
 * A child may also kill itself: with `JUSTONCE_CRASH_AT` in the `env` given to `spawn`, it
 * dies by SIGKILL at that crash point (see core's `common/crash-points.ts`); the crash-point
 * matrix (`crash-matrix/`) works that way.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';

/** What a child reports, one line each; `type` tells them apart. */
export interface ChildReport {
  readonly type: string;
}

/** A running child. */
export interface SpawnedChild<R extends ChildReport> {
  readonly process: ChildProcess;
  /** Every report so far, in order. */
  readonly reports: readonly R[];
  /**
   * The next report (after those an earlier `next` returned) of one of these types. Rejects,
   * with the child's stderr, if the child exits first or the report does not come in time.
   */
  next<T extends R['type']>(
    types: T | readonly T[],
    timeoutMs?: number,
  ): Promise<Extract<R, { type: T }>>;
  /** Kills the child with SIGKILL (if still running); resolves with its signal once it is gone. */
  kill(): Promise<NodeJS.Signals | null>;
  /** Resolves once the child is gone and its output read. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** What the child wrote to stderr so far. */
  stderr(): string;
}

/** One kind of child: its module, and how its job and its reports travel. */
export interface ChildModule<Job, R extends ChildReport> {
  /**
   * The parent's half: spawns a child on the module (through tsx) with the job, and `env`
   * added to its environment (e.g. `JUSTONCE_CRASH_AT`, read when core loads).
   */
  spawn(job: Job, env?: Readonly<Record<string, string>>): SpawnedChild<R>;
  /** The child's half: the job the parent gave it. */
  job(): Job;
  /** The child's half: writes one report for the parent. */
  report(line: R): void;
}

/** The repository root: tsx finds the workspace's path mapping in its tsconfig there. */
const ROOT = path.resolve(__dirname, '..');

/**
 * The kind of child that runs `file` (the module passes its own `__filename`). `name` names
 * the environment variable the job travels in (`<name>_JOB`) and starts each report line, so
 * a library's stray stdout line is never taken for a report.
 */
export function childModule<Job, R extends ChildReport>(
  file: string,
  name: string,
): ChildModule<Job, R> {
  const jobEnv = `${name}_JOB`;
  const prefix = `${name} `;
  return {
    spawn: (job, env = {}) =>
      spawnChild<R>(file, { ...env, [jobEnv]: JSON.stringify(job) }, prefix),
    job() {
      const job = process.env[jobEnv];
      if (job === undefined) throw new Error(`${jobEnv} is not set`);
      return JSON.parse(job) as Job;
    },
    report(line) {
      process.stdout.write(`${prefix}${JSON.stringify(line)}\n`);
    },
  };
}

// ---------------------------------------------------------------------------------------------
// The parent's half.

const running = new Set<ChildProcess>();

/** Kills every child still running; for a test file's `afterEach`, so none outlives its test. */
export async function killChildren(): Promise<void> {
  const children = [...running];
  running.clear();
  await Promise.all(
    children.map(async (child) => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const gone = new Promise((resolve) => child.once('close', resolve));
      child.kill('SIGKILL');
      await gone;
    }),
  );
}

function spawnChild<R extends ChildReport>(
  file: string,
  env: Record<string, string>,
  prefix: string,
): SpawnedChild<R> {
  const child = spawn(process.execPath, ['--import', 'tsx', file], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  const reports: R[] = [];
  const listeners = new Set<() => void>();
  const notify = () => listeners.forEach((listener) => listener());
  let stdout = '';
  let stderr = '';
  let gone: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  child.stdout!.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
    const lines = stdout.split('\n');
    stdout = lines.pop() ?? '';
    for (const line of lines) {
      if (line.startsWith(prefix)) reports.push(JSON.parse(line.slice(prefix.length)) as R);
    }
    notify();
  });
  // `close`, not `exit`: only then is every line the child wrote read.
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('close', (code, signal) => {
      running.delete(child);
      gone = { code, signal };
      notify();
      resolve(gone);
    });
  });
  let cursor = 0;
  return {
    process: child,
    reports,
    exited,
    stderr: () => stderr,
    next<T extends R['type']>(types: T | readonly T[], timeoutMs = 45_000) {
      const wanted: readonly R['type'][] = typeof types === 'string' ? [types] : types;
      type Wanted = Extract<R, { type: T }>;
      return new Promise<Wanted>((resolve, reject) => {
        const done = () => {
          clearTimeout(timer);
          listeners.delete(check);
        };
        const check = () => {
          while (cursor < reports.length) {
            const report = reports[cursor++]!;
            if (wanted.includes(report.type)) {
              done();
              resolve(report as Wanted);
              return;
            }
          }
          if (gone) {
            done();
            const how = gone.signal ?? `code ${gone.code}`;
            reject(
              new Error(`child exited (${how}) before reporting ${wanted}; stderr: ${stderr}`),
            );
          }
        };
        const timer = setTimeout(() => {
          done();
          reject(new Error(`child did not report ${wanted} in ${timeoutMs} ms; stderr: ${stderr}`));
        }, timeoutMs);
        listeners.add(check);
        check();
      });
    },
    async kill() {
      if (!gone) child.kill('SIGKILL');
      return (await exited).signal;
    },
  };
}

// ---------------------------------------------------------------------------------------------
// The child's half.

/**
 * Runs `main` as the child, reporting what it throws on stderr with exit code 1. Call it
 * under `if (require.main === module)`, so a test importing the parent's half runs nothing.
 */
export function runChild(main: () => Promise<void>): void {
  main().catch((error: unknown) => {
    process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
    process.exit(1);
  });
}

/** Never settles: where a child that reported its stop waits to be killed. */
export function hang(): Promise<never> {
  return new Promise<never>(() => undefined);
}
