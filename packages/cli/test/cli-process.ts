/**
 * The `justonce` CLI run as a child process (tsx on src/bin.ts, workspace sources), and the
 * fresh schema each test file works in. Shared by the CLI's test files.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { createStore, rowsOf, type Store } from '@justonce/core';

export const ROOT = join(__dirname, '..', '..', '..');
const BIN = join(__dirname, '..', 'src', 'bin.ts');
const TSX_CLI = require.resolve('tsx/cli');
export const URL = process.env['DATABASE_URL'] ?? 'postgres://postgres@127.0.0.1:5432/test';

/** A finished run of the CLI. */
export interface Run {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** The command line that runs `justonce args…`. */
function commandLine(args: readonly string[]): string[] {
  return [TSX_CLI, '--tsconfig', join(ROOT, 'tsconfig.json'), BIN, ...args];
}

function spawnCli(args: readonly string[], env: Record<string, string | undefined>): ChildProcess {
  return spawn(process.execPath, commandLine(args), {
    cwd: ROOT,
    env: { ...process.env, DATABASE_URL: URL, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

/** Runs `justonce args…` with `env` over this process's environment (DATABASE_URL set). */
export function cli(
  args: readonly string[],
  env: Record<string, string | undefined> = {},
): Promise<Run> {
  const child = spawnCli(args, env);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, stdout, stderr })));
}

/** A CLI process that keeps running (`status --watch`, `dashboard`). */
export interface RunningCli {
  readonly child: ChildProcess;
  /** Resolves with what stdout holds once it matches `pattern`; rejects if the child exits first. */
  stdoutMatching(pattern: RegExp, timeoutMs?: number): Promise<string>;
  /** Sends `signal` and resolves when the child is gone. */
  stop(signal: NodeJS.Signals): Promise<Run>;
}

/** Starts `justonce args…` without waiting for it to end. */
export function startCli(
  args: readonly string[],
  env: Record<string, string | undefined> = {},
): RunningCli {
  const child = spawnCli(args, env);
  let stdout = '';
  let stderr = '';
  const exited = new Promise<number | null>((resolve) => child.once('close', resolve));
  child.stdout!.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
  return {
    child,
    async stdoutMatching(pattern, timeoutMs = 20_000) {
      const deadline = Date.now() + timeoutMs;
      let gone = false;
      void exited.then(() => (gone = true));
      while (!pattern.test(stdout)) {
        if (gone || Date.now() > deadline) {
          throw new Error(`no ${pattern} on stdout; stdout: ${stdout}\nstderr: ${stderr}`);
        }
        await new Promise((r) => setTimeout(r, 25));
      }
      return stdout;
    },
    async stop(signal) {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      const code = await exited;
      return { code, stdout, stderr };
    },
  };
}

/**
 * Runs `justonce args…` on a pseudo-terminal (util-linux `script`), so that stdin, stdout and
 * stderr are TTYs as at an operator's terminal, typing `input` into it. Output comes back
 * merged, as the terminal showed it.
 */
export function cliOnTerminal(
  args: readonly string[],
  input: string,
  env: Record<string, string | undefined> = {},
): Promise<Run> {
  const quoted = [process.execPath, ...commandLine(args)]
    .map((a) => `'${a.replace(/'/g, `'\\''`)}'`)
    .join(' ');
  const child = spawn('script', ['-qec', quoted, '/dev/null'], {
    cwd: ROOT,
    env: { ...process.env, DATABASE_URL: URL, ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => {
    stdout += c.toString();
    // Answer once the question is on the screen, as a person would.
    if (input !== '' && /\[y\/N\]/.test(stdout)) {
      child.stdin.write(input);
      input = '';
    }
  });
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, stdout, stderr })));
}

/** A unique schema name for one test file. */
export function schemaName(prefix: string): string {
  return `${prefix}_${process.pid}_${Date.now().toString(36)}`;
}

/** Opens (and, unless `migrated` is false, migrates) a store in a fresh schema. */
export async function openStore(prefix: string, migrated = true): Promise<Store> {
  const store = await createStore({ connectionString: URL, schema: schemaName(prefix) });
  if (migrated) await store.migrate();
  return store;
}

/** Drops the store's schema and closes it. */
export async function dropStore(store: Store): Promise<void> {
  await store.knex.raw(`drop schema if exists ${store.names.schema} cascade`);
  await store.close();
}

/** Rows of one of justonce's tables, optionally filtered by a SQL condition. */
export async function countRows(store: Store, table: string, where = 'true'): Promise<number> {
  const result = await store.knex.raw(
    `select count(*)::int as n from ${store.names.table(table)} where ${where}`,
  );
  return rowsOf<{ n: number }>(result)[0]!.n;
}

/** A snapshot of every justonce table's rows, to show that a command changed nothing. */
export async function snapshot(store: Store): Promise<unknown> {
  const tables = ['outbox', 'dead_letters', 'idempotency', 'inbox_records', 'inbox_attempts'];
  const out: Record<string, unknown> = {};
  for (const t of tables) {
    const result = await store.knex.raw(`select * from ${store.names.table(t)}`);
    out[t] = rowsOf(result)
      .map((row) => JSON.stringify(row))
      .sort();
  }
  return out;
}

/**
 * Runs `justonce args…` in `store`'s schema and expects it refused: `message` on stderr, exit
 * `code` (2, bad arguments, unless told), and not one row changed.
 */
export async function expectRefused(
  store: Store,
  args: readonly string[],
  message: RegExp,
  code = 2,
): Promise<Run> {
  const before = await snapshot(store);
  const run = await cli(['--schema', store.schema, ...args]);
  expect(run.stderr).toMatch(message);
  expect(run.code).toBe(code);
  expect(await snapshot(store)).toEqual(before);
  return run;
}

/** A test file's fresh schema: open from its `beforeAll` to its `afterAll`. */
export interface SchemaFixture {
  /** The store on the schema; read it inside tests and hooks only. */
  readonly store: Store;
  /** Runs `justonce --schema <the schema> args…`. */
  readonly inSchema: (...args: string[]) => Promise<Run>;
}

/**
 * Opens a store in a fresh schema before the file's tests (migrated unless `migrated` is
 * false, then filled by `seed`) and drops it after them.
 */
export function useSchema(
  prefix: string,
  seed: (store: Store) => Promise<void> = async () => undefined,
  migrated = true,
): SchemaFixture {
  let store: Store | undefined;
  const opened = (): Store => {
    if (store === undefined) throw new Error(`the ${prefix} schema is open only during tests`);
    return store;
  };
  beforeAll(async () => {
    store = await openStore(prefix, migrated);
    await seed(store);
  });
  afterAll(() => (store === undefined ? undefined : dropStore(store)));
  return {
    get store() {
      return opened();
    },
    inSchema: (...args) => cli(['--schema', opened().schema, ...args]),
  };
}
